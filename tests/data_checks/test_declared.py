"""A raw-table suite generated from a dataset definition: what each declaration adds.

The suite of a small definition is run by Great Expectations and by the vectorised run on its
rows, as published and corrupted; both verdicts agree, and each corruption fails the expectation
its declaration generates (a share of values present only warns).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from data_checks.declared import DeclaredChecks, integer_regex
from data_checks.expectations import certainly_passes, failed_critical
from data_checks.validate import run_checks
from fedcare_core.data.declared import DeclaredSource, read_definition
from tests.fedcare_core.data.declared.helpers import SMALL_DEFINITION, SMALL_ROWS, changed

#: The small definition, with identifiers of a declared form, a share of LAB values present
#: and an age band read as its midpoint (a float written as intervals).
DEFINITION = changed(
    changed(
        changed(
            SMALL_DEFINITION,
            "  encounter: EID\n",
            "  encounter: EID\n  pattern: '[pe][0-9]+'\n",
        ),
        "gaps: true, known_at: stay}",
        "gaps: true, present_at_least: 0.75, known_at: stay}",
    ),
    "  DISPO:",
    "  BAND: {type: float, parse: interval_midpoint, range: [0, 120], known_at: admission}\n"
    "  DISPO:",
).replace("mortality: [SRC]", "mortality: [SRC, BAND]")
ROWS = SMALL_ROWS.replace("READMIT\n", "READMIT,BAND\n").replace(",N\n", ",N,[40-50)\n")
ROWS = ROWS.replace(",Y\n", ",Y,[60-70)\n")


@pytest.fixture
def checks(tmp_path: Path) -> DeclaredChecks:
    (tmp_path / "definition.yaml").write_text(DEFINITION)
    (tmp_path / "rows.csv").write_text(ROWS)
    return DeclaredChecks(DeclaredSource(read_definition(tmp_path / "definition.yaml")))


def _kinds(checks: DeclaredChecks, column: str, unseen: str = "refuse") -> list[str]:
    return [
        e.kind.removeprefix("ExpectColumnValues").removeprefix("To") + ("!" if e.warning else "")
        for e in checks.expectations(unseen)
        if e.kwargs.get("column") == column
    ]


def test_each_declaration_generates_its_expectations(checks: DeclaredChecks) -> None:
    assert _kinds(checks, "PID") == ["NotBeNull", "MatchRegex"]
    assert _kinds(checks, "EID") == ["NotBeNull", "MatchRegex", "BeUnique"]
    assert _kinds(checks, "AGE") == ["NotBeNull", "MatchRegex"]  # whole, within its range
    assert _kinds(checks, "LAB") == ["NotBeNull!", "MatchRegex"]  # a share present: a warning
    assert _kinds(checks, "CODE") == ["MatchRegex"]  # gaps, no share: its form only
    assert _kinds(checks, "BAND") == ["NotBeNull", "MatchRegex"]  # an interval's shape
    assert _kinds(checks, "SEX") == ["NotBeNull", "BeInSet"]
    assert _kinds(checks, "ADMIT") == ["NotBeNull"]  # the loader parses date-times
    # --unseen-categories other: a feature's vocabulary goes, a label source's stays.
    assert _kinds(checks, "SEX", "other") == ["NotBeNull"]
    assert _kinds(checks, "READMIT", "other") == ["NotBeNull", "BeInSet"]
    share = next(e for e in checks.expectations("refuse") if e.warning)
    assert share.kwargs == {"column": "LAB", "mostly": 0.75}
    assert checks.certainly_pass(checks.declaration.path.parent, "refuse")  # the rows as written


def _gx(checks: DeclaredChecks, table: pd.DataFrame, out: Path) -> dict[tuple[str, str], bool]:
    report = run_checks({checks.table: table}, checks.suites("refuse"), out)
    assert report.n_expectations == len(checks.expectations("refuse"))
    result = json.loads((out / f"{checks.table}.json").read_text())
    return {
        (r["expectation_config"]["type"], str(r["expectation_config"]["kwargs"].get("column"))): r[
            "success"
        ]
        for r in result["results"]
    }


@pytest.mark.parametrize(
    ("column", "value", "failed"),
    [
        (None, None, []),
        ("AGE", "111", ["match_regex:AGE"]),
        ("AGE", "17", ["match_regex:AGE"]),
        ("AGE", "40.5", ["match_regex:AGE"]),
        ("AGE", " 40.0", []),  # the loader reads 40
        ("PID", "P1", ["match_regex:PID"]),
        ("BAND", "40-50", ["match_regex:BAND"]),
        ("LAB", "high", ["match_regex:LAB"]),
        ("LAB", None, ["not_be_null:LAB"]),  # 2 of 4 present, below 0.75: a warning
        ("READMIT", "maybe", ["be_in_set:READMIT"]),
    ],
)
def test_great_expectations_and_the_vectorised_run_agree(
    checks: DeclaredChecks,
    tmp_path: Path,
    column: str | None,
    value: str | None,
    failed: list[str],
) -> None:
    table = checks.read(tmp_path)[checks.table]
    if column is not None:
        table.loc[0, column] = value
    gx = _gx(checks, table, tmp_path / "report")
    fast = {
        (re.sub(r"(?<!^)(?=[A-Z])", "_", e.kind).lower(), str(e.kwargs.get("column"))): (
            certainly_passes(table, e)
        )
        for e in checks.expectations("refuse")
    }
    assert fast == gx
    names = [
        f"{k.removeprefix('expect_column_values_to_')}:{c}" for (k, c), ok in gx.items() if not ok
    ]
    assert names == failed
    warned_only = column == "LAB" and value is None
    assert (failed_critical(table, checks.expectations("refuse")) == []) == (
        not failed or warned_only
    )


@pytest.mark.parametrize(
    ("low", "high"), [(0, 0), (1, 14), (0, 500), (0, 365), (-12, 7), (-120, -3), (99, 1001)]
)
def test_an_integer_range_is_a_pattern_of_exactly_its_numbers(low: int, high: int) -> None:
    pattern = re.compile(integer_regex(low, high))
    for n in range(-1200, 1200):
        for text in (str(n), f"{n}.0", f" {n} ", f"00{n}" if n >= 0 else f"-00{-n}"):
            assert bool(pattern.search(text)) == (low <= n <= high), text
    for text in ("1e1", "1.5", "", "x", "--1", "1 1"):
        assert not pattern.search(text), text
    assert not re.compile(integer_regex(3, 2)).search("2")  # an empty range
