"""The vectorised run of the raw suite agrees with Great Expectations, expectation by expectation.

The suite is Diabetes 130-US's, generated from its definition file
(:class:`data_checks.declared.DeclaredChecks`). Every table below is validated twice: by Great
Expectations (``run_checks``, the suite built from the same :class:`Expect` records) and by
:func:`certainly_passes`; for every expectation the two verdicts must be equal, on the fixture,
on the published file and on corrupted copies (bad categories, missing values, duplicates,
malformed or out-of-range numbers and codes, a missing column, no rows). A vectorised "pass"
where Great Expectations fails would let a bad file through.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from data_checks.declared import DeclaredChecks
from data_checks.expectations import Expect, certainly_passes, failed_critical
from data_checks.validate import run_checks
from fedcare_core.data.diabetes130.dataset import SOURCE

TINY_CSV = (
    Path(__file__).parents[1] / "fedcare_core" / "data" / "fixtures" / "diabetic_data_tiny.csv"
)
#: Diabetes 130-US's raw-table checks, generated from its definition.
CHECKS = DeclaredChecks(SOURCE)
TABLE = CHECKS.table


def read_raw(path: Path) -> pd.DataFrame:
    """The raw table as the suite sees it (text, ``?`` missing)."""
    return CHECKS.read(path)[TABLE]


def _key(kind: str, kwargs: dict[str, object]) -> tuple[str, object]:
    return kind, kwargs.get("column")


def gx_verdicts(table: pd.DataFrame, unseen: str, tmp_path: Path) -> dict[tuple[str, object], bool]:
    """Each expectation's success as Great Expectations decides it, by (type, column)."""
    run_checks({TABLE: table}, CHECKS.suites(unseen), tmp_path)
    result = json.loads((tmp_path / f"{TABLE}.json").read_text())
    verdicts = {}
    for r in result["results"]:
        config = r["expectation_config"]
        kind = "Expect" + "".join(w.title() for w in config["type"].split("_")[1:])
        verdicts[_key(kind, config["kwargs"])] = bool(r["success"])
    return verdicts


def assert_agree(table: pd.DataFrame, tmp_path: Path, unseen: str = "refuse") -> list[str]:
    """Assert both verdicts agree on every expectation; the failed ones' (type, column)."""
    expectations = CHECKS.expectations(unseen)
    gx = gx_verdicts(table, unseen, tmp_path)
    assert len(gx) == len(expectations)
    failed = []
    for e in expectations:
        verdict = certainly_passes(table, e)
        assert verdict == gx[_key(e.kind, dict(e.kwargs))], (e.kind, e.kwargs.get("column"))
        if not verdict:
            failed.append(f"{e.kind}:{e.kwargs.get('column')}")
    return failed


def _set(column: str, row: int, value: object) -> Callable[[pd.DataFrame], pd.DataFrame]:
    """A change writing ``value`` in ``column`` at position ``row`` (the column then objects)."""

    def change(df: pd.DataFrame) -> pd.DataFrame:
        values = df[column].to_numpy(dtype=object, copy=True)
        values[row] = value
        return df.assign(**{column: values})

    return change


def _dup(df: pd.DataFrame) -> pd.DataFrame:
    """Row 5's encounter_id repeats row 6's."""
    ids = df["encounter_id"].to_numpy(dtype=object, copy=True)
    ids[5] = ids[6]
    return df.assign(encounter_id=pd.Series(ids, index=df.index, dtype=df["encounter_id"].dtype))


CORRUPTIONS: dict[str, tuple[Callable[[pd.DataFrame], pd.DataFrame], list[str]]] = {
    "as published": (lambda df: df, []),
    "unknown race": (_set("race", 3, "Martian"), ["ExpectColumnValuesToBeInSet:race"]),
    "missing gender": (_set("gender", 4, np.nan), ["ExpectColumnValuesToNotBeNull:gender"]),
    "repeated encounter": (_dup, ["ExpectColumnValuesToBeUnique:encounter_id"]),
    "decimal identifier": (
        _set("encounter_id", 6, "12.0"),
        ["ExpectColumnValuesToMatchRegex:encounter_id"],
    ),
    "zero identifier": (
        _set("patient_nbr", 6, "0"),
        ["ExpectColumnValuesToMatchRegex:patient_nbr"],
    ),
    "negative count": (
        _set("num_procedures", 7, "-1"),
        ["ExpectColumnValuesToMatchRegex:num_procedures"],
    ),
    "count above its range": (
        _set("num_procedures", 7, "51"),
        ["ExpectColumnValuesToMatchRegex:num_procedures"],
    ),
    "fractional count": (
        _set("number_diagnoses", 7, "7.5"),
        ["ExpectColumnValuesToMatchRegex:number_diagnoses"],
    ),
    "count written 7.0": (_set("number_diagnoses", 7, "7.0"), []),  # the loader reads 7
    "exponent count": (
        _set("num_medications", 8, "1e3"),
        ["ExpectColumnValuesToMatchRegex:num_medications"],
    ),
    "long ICD-9 code": (_set("diag_1", 9, "250.833"), ["ExpectColumnValuesToMatchRegex:diag_1"]),
    "short V code": (_set("diag_2", 9, "V4"), ["ExpectColumnValuesToMatchRegex:diag_2"]),
    "15 days": (
        _set("time_in_hospital", 2, "15"),
        ["ExpectColumnValuesToMatchRegex:time_in_hospital"],
    ),
    "0 days": (
        _set("time_in_hospital", 2, "0"),
        ["ExpectColumnValuesToMatchRegex:time_in_hospital"],
    ),
    "age bracket": (_set("age", 2, "[100-110)"), ["ExpectColumnValuesToBeInSet:age"]),
    "lower case": (_set("change", 2, "no"), ["ExpectColumnValuesToBeInSet:change"]),
    "leading space": (_set("insulin", 2, " Steady"), ["ExpectColumnValuesToBeInSet:insulin"]),
    "trailing newline": (_set("encounter_id", 2, "123\n"), []),  # '$' matches before it, in both
    "extra column": (lambda df: df.assign(note="x"), []),
    "no rows": (lambda df: df.iloc[:0], ["ExpectTableRowCountToBeBetween:None"]),
    "no medical specialty": (  # a warning; the in-set check of no value passes (vacuous)
        lambda df: df.assign(medical_specialty=pd.Series([np.nan] * len(df), dtype=object)),
        ["ExpectColumnValuesToNotBeNull:medical_specialty"],
    ),
    "gender column gone": (
        lambda df: df.drop(columns=["gender"]),
        [
            "ExpectTableColumnsToMatchSet:None",
            "ExpectColumnValuesToNotBeNull:gender",
            "ExpectColumnValuesToBeInSet:gender",
        ],
    ),
}


@pytest.mark.parametrize("case", sorted(CORRUPTIONS))
def test_the_vectorised_run_agrees_with_great_expectations(case: str, tmp_path: Path) -> None:
    change, expected = CORRUPTIONS[case]
    raw = read_raw(TINY_CSV)
    table = change(raw)
    # The fixture's 40 rows already miss more race and diag_2 values than the published share
    # (two warnings); each case adds its own failures.
    before = set(assert_agree(raw, tmp_path / "before"))
    assert before == {"ExpectColumnValuesToNotBeNull:race", "ExpectColumnValuesToNotBeNull:diag_2"}
    assert [f for f in assert_agree(table, tmp_path / "refuse") if f not in before] == expected
    assert_agree(table, tmp_path / "other", unseen="other")


def test_unseen_other_drops_a_features_vocabulary_only(tmp_path: Path) -> None:
    # As the loader: --unseen-categories other encodes a feature's unseen value; a label's
    # source (readmitted) and the age brackets are refused whatever the option.
    raw = read_raw(TINY_CSV)
    table = _set("age", 4, "[100-110)")(
        _set("readmitted", 3, "YES")(_set("race", 3, "Martian")(raw))
    )
    failed = assert_agree(table, tmp_path, unseen="other")
    assert [f for f in failed if "NotBeNull" not in f] == [
        "ExpectColumnValuesToBeInSet:age",
        "ExpectColumnValuesToBeInSet:readmitted",
    ]
    assert len(CHECKS.expectations("other")) < len(CHECKS.expectations("refuse"))


@pytest.mark.realdata
def test_it_agrees_on_the_published_file(data_dir: Path, tmp_path: Path) -> None:
    with zipfile.ZipFile(data_dir / "diabetes130" / "dataset_diabetes.zip") as zf:
        data = zf.read("dataset_diabetes/diabetic_data.csv")
    csv = tmp_path / "diabetic_data.csv"
    csv.write_bytes(b"".join(io.BytesIO(data).readlines()[:20001]))
    table = read_raw(csv)
    # The published file's first 20,000 rows pass every critical expectation (payer_code is
    # below its share there: a warning).
    assert failed_critical(table, CHECKS.expectations("refuse")) == []
    assert assert_agree(table, tmp_path / "gx") == ["ExpectColumnValuesToNotBeNull:payer_code"]
    bad = _set("readmitted", 19_999, "<60")(_dup(table))
    assert assert_agree(bad, tmp_path / "bad") == [
        "ExpectColumnValuesToBeUnique:encounter_id",
        "ExpectColumnValuesToNotBeNull:payer_code",
        "ExpectColumnValuesToBeInSet:readmitted",
    ]


def test_what_it_does_not_model_is_left_to_great_expectations() -> None:
    table = pd.DataFrame({"x": ["1", "2"], "n": [1, 2]})
    assert certainly_passes(table, Expect("ExpectColumnValuesToNotBeNull", {"column": "x"}))
    unknown = [
        Expect("ExpectColumnValuesToBeBetween", {"column": "x", "min_value": 0}),
        Expect("ExpectColumnValuesToNotBeNull", {"column": "x", "row_condition": "x > 1"}),
        Expect("ExpectColumnValuesToNotBeNull", {"column": "n"}),  # not a text column
        Expect("ExpectColumnValuesToNotBeNull", {"column": "absent"}),
        Expect("ExpectColumnValuesToMatchRegex", {"column": "x", "regex": "("}),  # bad pattern
        Expect("ExpectTableRowCountToBeBetween", {}),
        Expect("ExpectTableRowCountToBeBetween", {"min_value": {"$PARAMETER": "n"}}),
    ]
    assert [certainly_passes(table, e) for e in unknown] == [False] * len(unknown)


def test_a_failed_warning_is_no_refusal() -> None:
    table = pd.DataFrame({"x": ["1", None, None]})
    warn = Expect("ExpectColumnValuesToNotBeNull", {"column": "x", "mostly": 0.9}, warning=True)
    crit = Expect("ExpectColumnValuesToNotBeNull", {"column": "x", "mostly": 0.3})
    strict = Expect("ExpectColumnValuesToNotBeNull", {"column": "x"})
    assert failed_critical(table, [warn, crit]) == []
    assert failed_critical(table, [warn, crit, strict]) == [strict]


def test_a_good_file_is_checked_without_importing_great_expectations() -> None:
    code = (
        "import sys\n"
        "from data_checks.source_checks import checked_dataset\n"
        "from fedcare_core.config import DataConfig\n"
        f"loaded = checked_dataset(DataConfig(), {str(TINY_CSV)!r}, verify_checksum=False)\n"
        "print(len(loaded.cohort.features), 'great_expectations' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["40", "False"]
