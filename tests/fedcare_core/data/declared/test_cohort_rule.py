"""A cohort rule that keeps no row is refused by name, with the rows before and after it."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedcare_core.data.declared import read_definition
from fedcare_core.data.declared.loader import load_declared
from fedcare_core.errors import DataError
from tests.fedcare_core.data.declared.helpers import SMALL_DEFINITION, SMALL_ROWS, changed, write

RULE = "include: {column: DISPO, ne: AMA}"


def _load(tmp_path: Path, rule: str) -> None:
    definition = write(tmp_path / "tiny.yaml", changed(SMALL_DEFINITION, RULE, rule))
    write(tmp_path / "rows.csv", SMALL_ROWS)
    load_declared(read_definition(definition), tmp_path)


@pytest.mark.parametrize(
    ("rule", "words"),
    [
        ("include: {column: AGE, gt: 100}", "AGE > 100"),
        (  # the one EXPIRED row has a LAB gap
            "include: {all: [{column: DISPO, in: [EXPIRED]}, {column: LAB, missing: false}]}",
            "all(DISPO in ['EXPIRED'], LAB is not missing)",
        ),
        ("include: {column: LAB, gt: 50}", "LAB > 50"),  # unknown where LAB is missing
    ],
)
def test_a_rule_keeping_no_row_is_named_with_its_counts(
    tmp_path: Path, rule: str, words: str
) -> None:
    with pytest.raises(DataError) as caught:
        _load(tmp_path, rule)
    error = caught.value
    assert error.file == str(tmp_path / "rows.csv") and error.rows is None
    assert error.message.startswith(f"the cohort rule of {tmp_path / 'tiny.yaml'} ")
    assert f"(cohort.include: {words}) keeps none of the 4 rows (4 before it, 0 after" in str(error)
    assert "p1" not in str(error) and "\n" not in str(error)


def test_a_rule_keeping_one_row_loads(tmp_path: Path) -> None:
    definition = write(
        tmp_path / "tiny.yaml", changed(SMALL_DEFINITION, RULE, "include: {column: AGE, gt: 69}")
    )
    write(tmp_path / "rows.csv", SMALL_ROWS)
    cohort, _ = load_declared(read_definition(definition), tmp_path)
    assert len(cohort.features) == 1
    assert "cohort rule: 3 of 4 rows left out" in cohort.notes
