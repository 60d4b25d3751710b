"""A definition's sensitive attributes: read, checked against its columns, given to the cohort."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedcare_core.data.declared import read_definition
from fedcare_core.data.declared.loader import load_declared
from fedcare_core.data.definitions import builtin_definition
from fedcare_core.data.subgroups import SensitiveAttribute
from fedcare_core.errors import DefinitionError
from tests.fedcare_core.data.declared.helpers import (
    SMALL_DEFINITION,
    SMALL_ROWS,
    changed,
    write,
)

#: Where the small definition takes a ``sensitive`` key.
AT = "strata: SRC\n"
GOOD = AT + "sensitive:\n  age: {column: AGE, bands: [50, 70]}\n  sex: {column: SEX}\n"


def _definition(tmp_path: Path, sensitive: str) -> Path:
    return write(tmp_path / "definition.yaml", changed(SMALL_DEFINITION, AT, AT + sensitive))


def test_sensitive_attributes_are_read_in_order_and_reach_the_cohort(tmp_path: Path) -> None:
    d = read_definition(write(tmp_path / "d.yaml", changed(SMALL_DEFINITION, AT, GOOD)))
    assert d.sensitive == (
        SensitiveAttribute("age", "AGE", (50.0, 70.0)),
        SensitiveAttribute("sex", "SEX"),
    )
    write(tmp_path / "rows.csv", SMALL_ROWS)
    cohort, _ = load_declared(d, tmp_path)
    assert cohort.sensitive == d.sensitive
    assert read_definition(write(tmp_path / "none.yaml", SMALL_DEFINITION)).sensitive == ()


def test_a_feature_outside_the_partition_may_be_sensitive(tmp_path: Path) -> None:
    # SRC is the strata column, a feature in pools only: still a feature of the cohort
    d = read_definition(_definition(tmp_path, "sensitive:\n  source: {column: SRC}\n"))
    assert d.sensitive == (SensitiveAttribute("source", "SRC"),)


#: (what, the ``sensitive`` key written, the key at fault, a word of the message)
MALFORMED = [
    ("an undeclared column", "sensitive:\n  ward: {column: WARD}\n", "sensitive.ward.column",
     "not a declared column"),
    ("an identifier", "sensitive:\n  who: {column: PID}\n", "sensitive.who.column",
     "an identifier"),
    ("a column that is no feature", "sensitive:\n  dispo: {column: DISPO}\n",
     "sensitive.dispo.column", "not a feature"),
    ("bands on a categorical", "sensitive:\n  sex: {column: SEX, bands: [1]}\n",
     "sensitive.sex.bands", "bands are for integer and float"),
    ("bands decreasing", "sensitive:\n  age: {column: AGE, bands: [70, 50]}\n",
     "sensitive.age.bands", "strictly increasing"),
    ("bands repeated", "sensitive:\n  age: {column: AGE, bands: [50, 50]}\n",
     "sensitive.age.bands", "written twice"),
    ("no column", "sensitive:\n  age: {bands: [50]}\n", "sensitive.age.column", "missing key"),
    ("an unknown key", "sensitive:\n  age: {column: AGE, colour: red}\n",
     "sensitive.age.colour", "unknown key"),
    ("a name with capitals", "sensitive:\n  Age: {column: AGE}\n", "sensitive", "Age"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("sensitive", "key", "word"),
    [pytest.param(text, key, word, id=what) for what, text, key, word in MALFORMED],
)
def test_a_bad_sensitive_attribute_is_refused(
    tmp_path: Path, sensitive: str, key: str, word: str
) -> None:
    path = _definition(tmp_path, sensitive)
    with pytest.raises(DefinitionError) as ei:
        read_definition(path)
    assert ei.value.file == str(path)
    assert ei.value.key == key
    assert word in ei.value.message


@pytest.mark.parametrize(("dataset", "race"), [("diabetes130", "race"), ("mimic3", "ethnicity")])
def test_the_builtin_definitions_declare_age_sex_and_race(dataset: str, race: str) -> None:
    d = read_definition(builtin_definition(dataset))
    assert d.sensitive == (
        SensitiveAttribute("age", "age", (50.0, 70.0)),
        SensitiveAttribute("sex", "gender"),
        SensitiveAttribute("race", race),
    )
