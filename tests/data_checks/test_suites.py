"""The suites on real, synthetic and corrupted tables; the reports name failures, not patients."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from great_expectations import ExpectationSuite

from data_checks.declared import DeclaredChecks
from data_checks.suites import (
    client_partition_suite,
    federation_checks,
    mimic3_raw_suites,
)
from data_checks.tables import (
    ASSIGNMENT_TABLE,
    assignment_table,
    client_partition_tables,
    label_column,
    read_mimic3_raw,
    recompute_assignment,
)
from data_checks.validate import CheckReport, Failure, run_checks
from fedcare_core.config import DataConfig
from fedcare_core.data.clients import Federation, build_federation
from fedcare_core.data.cohort import Cohort
from fedcare_core.data.diabetes130.dataset import SOURCE as DIABETES130
from tests.fedcare_core.data.mimic3.synthetic import write_synthetic_mimic3
from tests.fedcare_core.synthetic import PARTITION, make_cohort

TINY_CSV = (
    Path(__file__).parents[1] / "fedcare_core" / "data" / "fixtures" / "diabetic_data_tiny.csv"
)

#: Synthetic patient keys start here, so a key in a report would be an unmistakable string.
PATIENT_BASE = 7_300_000_000
#: A patient number planted in a corrupted Diabetes table (and failing its digits check).
SECRET_PATIENT = "PATIENT7301234567"
#: Diabetes 130-US's raw-table checks, generated from its definition file.
DIABETES_CHECKS = DeclaredChecks(DIABETES130)
DIABETES130_TABLE = DIABETES_CHECKS.table


def mentions(text: str, token: str) -> bool:
    """``token`` appears in ``text`` as a whole value, not inside a longer number or hash."""
    return re.search(rf"(?<![0-9A-Za-z.]){re.escape(token)}(?![0-9A-Za-z.])", text) is not None


def report_text(report: CheckReport) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(report.report_dir.iterdir()))


def failures_of(report: CheckReport, table: str) -> list[Failure]:
    return [f for f in report.failures if f.table == table]


def has_failure(report: CheckReport, table: str, expectation: str, column: str | None) -> bool:
    return any(
        f.expectation == expectation and f.column == column for f in failures_of(report, table)
    )


# ---------------------------------------------------------------------------------------------
# Diabetes 130-US
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_diabetes() -> pd.DataFrame:
    return DIABETES_CHECKS.read(TINY_CSV)[DIABETES130_TABLE]


@pytest.fixture(scope="module")
def corrupted_diabetes_report(
    tiny_diabetes: pd.DataFrame, tmp_path_factory: pytest.TempPathFactory
) -> tuple[CheckReport, pd.DataFrame]:
    bad = tiny_diabetes.copy()
    bad.loc[2, "readmitted"] = "YES"
    bad.loc[3, "time_in_hospital"] = "99"
    bad.loc[4, "patient_nbr"] = SECRET_PATIENT
    bad = bad.rename(columns={"num_medications": "n_medications"})
    out = tmp_path_factory.mktemp("diabetes_bad")
    report = run_checks({DIABETES130_TABLE: bad}, DIABETES_CHECKS.suites("refuse"), out)
    return report, bad


def test_the_suite_is_named_as_the_reports_name_the_table() -> None:
    (name,) = DIABETES_CHECKS.suites("refuse")
    assert name == DIABETES130_TABLE == "diabetes130_raw"


def test_tiny_diabetes_sample_passes_with_its_gaps_as_warnings(
    tiny_diabetes: pd.DataFrame, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # The fixture is enriched with gaps: below the definition's present_at_least for race
    # (0.95) and diag_2 (0.98), measured on the full file. Warnings, not refusals.
    out = tmp_path_factory.mktemp("diabetes_ok")
    report = run_checks({DIABETES130_TABLE: tiny_diabetes}, DIABETES_CHECKS.suites("refuse"), out)
    assert report.passed, report.summary()
    assert [(w.expectation, w.column) for w in report.warnings] == [
        ("expect_column_values_to_not_be_null", "race"),
        ("expect_column_values_to_not_be_null", "diag_2"),
    ]
    assert "required share ≥ 0.95" in report.warnings[0].observed


def test_corrupted_diabetes_fails_naming_expectation_and_column(
    corrupted_diabetes_report: tuple[CheckReport, pd.DataFrame],
) -> None:
    report, _ = corrupted_diabetes_report
    assert not report.passed
    t = DIABETES130_TABLE
    assert has_failure(report, t, "expect_table_columns_to_match_set", None)
    assert has_failure(report, t, "expect_column_values_to_be_in_set", "readmitted")
    assert has_failure(report, t, "expect_column_values_to_match_regex", "time_in_hospital")
    assert has_failure(report, t, "expect_column_values_to_match_regex", "patient_nbr")
    # The renamed column's own checks cannot run: reported, not raised.
    gone = [f for f in failures_of(report, t) if f.column == "num_medications"]
    assert gone and all("could not be evaluated" in f.observed for f in gone)
    readmitted = next(f for f in failures_of(report, t) if f.column == "readmitted")
    assert readmitted.observed.startswith("1 of 40 values unexpected")


def test_corrupted_diabetes_report_is_html_and_holds_no_patient_values(
    corrupted_diabetes_report: tuple[CheckReport, pd.DataFrame],
) -> None:
    report, bad = corrupted_diabetes_report
    index = report.html_report.read_text(encoding="utf-8")
    assert index.lstrip().startswith("<!DOCTYPE html>")
    assert "expect_column_values_to_be_in_set" in index and "readmitted" in index
    page = (report.report_dir / f"{DIABETES130_TABLE}.html").read_text(encoding="utf-8")
    assert "<html" in page and "readmitted" in page
    text = report_text(report)
    ids = {*bad["patient_nbr"], *bad["encounter_id"]}
    assert SECRET_PATIENT in ids
    leaked = sorted(i for i in ids if mentions(text, i))
    assert not leaked, f"identifiers in the report: {leaked[:5]}"
    assert "YES" not in text  # the bad label value itself is not listed either


@pytest.mark.realdata
def test_real_diabetes_table_passes(data_dir: Path, tmp_path: Path) -> None:
    df = DIABETES_CHECKS.read(data_dir / "diabetes130")[DIABETES130_TABLE]
    assert len(df) == 101_766
    report = run_checks({DIABETES130_TABLE: df}, DIABETES_CHECKS.suites("refuse"), tmp_path)
    assert report.passed, report.summary()
    # Every column's share of values present is above its present_at_least: no warning.
    assert report.n_expectations == 101 and report.warnings == []
    assert DIABETES_CHECKS.certainly_pass(data_dir / "diabetes130", "refuse")


# ---------------------------------------------------------------------------------------------
# MIMIC-III
# ---------------------------------------------------------------------------------------------


def test_synthetic_lower_case_mimic3_tables_pass(tmp_path: Path) -> None:
    write_synthetic_mimic3(tmp_path / "raw", n_patients=6, lowercase=True, gzip=True)
    tables = read_mimic3_raw(tmp_path / "raw")
    report = run_checks(tables, mimic3_raw_suites(), tmp_path / "report")
    assert report.passed, report.summary()


@pytest.mark.realdata
def test_mimic3_demo_passes_and_negative_los_fails(data_dir: Path, tmp_path: Path) -> None:
    tables = read_mimic3_raw(data_dir / "mimic3-demo")
    report = run_checks(tables, mimic3_raw_suites(), tmp_path / "ok")
    assert report.passed, report.summary()

    icu = tables["ICUSTAYS"].copy()
    icu.loc[icu.index[:2], "LOS"] = -0.5
    bad = run_checks(
        {"ICUSTAYS": icu}, {"ICUSTAYS": mimic3_raw_suites()["ICUSTAYS"]}, tmp_path / "bad"
    )
    assert [(f.expectation, f.column) for f in bad.failures] == [
        ("expect_column_values_to_be_between", "LOS")
    ]
    assert bad.failures[0].observed.startswith(f"2 of {len(icu)} values unexpected")
    text = report_text(bad)
    assert "expect_column_values_to_be_between" in text
    assert not [s for s in icu["SUBJECT_ID"].astype(str) if mentions(text, s)]


def test_mimic3_type_and_flag_problems_fail(tmp_path: Path) -> None:
    write_synthetic_mimic3(tmp_path / "raw", n_patients=4)
    tables = read_mimic3_raw(tmp_path / "raw")
    adm = tables["ADMISSIONS"].copy()
    adm["HOSPITAL_EXPIRE_FLAG"] = adm["HOSPITAL_EXPIRE_FLAG"].astype("int64")
    adm.loc[adm.index[0], "HOSPITAL_EXPIRE_FLAG"] = 2
    icu = tables["ICUSTAYS"].copy()
    icu["LOS"] = icu["LOS"].astype(str)  # a stray text value makes the column text
    icu = icu.drop(columns=["INTIME"])
    suites = mimic3_raw_suites()
    report = run_checks(
        {"ADMISSIONS": adm, "ICUSTAYS": icu},
        {"ADMISSIONS": suites["ADMISSIONS"], "ICUSTAYS": suites["ICUSTAYS"]},
        tmp_path / "report",
    )
    assert has_failure(
        report, "ADMISSIONS", "expect_column_values_to_be_in_set", "HOSPITAL_EXPIRE_FLAG"
    )
    assert has_failure(report, "ICUSTAYS", "expect_column_values_to_be_in_type_list", "LOS")
    assert has_failure(report, "ICUSTAYS", "expect_table_columns_to_match_set", None)


# ---------------------------------------------------------------------------------------------
# Client partitions and patient assignment
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Setup:
    cohort: Cohort
    config: DataConfig
    federation: Federation


@pytest.fixture(scope="module")
def setup() -> Setup:
    cohort = make_cohort(300)
    cohort = dataclasses.replace(cohort, patient=cohort.patient + PATIENT_BASE)
    config = DataConfig(clients=3)
    return Setup(cohort, config, build_federation(cohort, PARTITION, config, seed=0))


def checks_of(s: Setup) -> tuple[dict[str, pd.DataFrame], dict[str, ExpectationSuite]]:
    return federation_checks(s.federation, recompute_assignment(s.cohort, s.config, 0))


def test_synthetic_federation_passes(setup: Setup, tmp_path: Path) -> None:
    tables, suites = checks_of(setup)
    report = run_checks(tables, suites, tmp_path)
    assert report.passed, report.summary()
    assert report.tables == ("client_00", "client_01", "client_02", ASSIGNMENT_TABLE)


def test_bad_partitions_and_shared_patient_fail_without_naming_patients(
    setup: Setup, tmp_path: Path
) -> None:
    tables, suites = checks_of(setup)
    binary = [
        c
        for c in setup.federation.clients
        if setup.federation.objective(c.objectives[0]).kind == "binary"
    ]
    assert binary, "the seed should give a client a binary objective"
    negative = binary[0]
    name = f"client_{negative.client_id:02d}"
    col = label_column(negative.objectives[0])
    tables[name] = tables[name].assign(
        **{col: tables[name][col].where(tables[name][col].isna(), 0.0)}
    )

    a = recompute_assignment(setup.cohort, setup.config, 0)
    client = a.client.copy()
    first = np.flatnonzero(a.patient == a.patient[0])
    client[first[0]] = (client[first[0]] + 1) % setup.config.clients  # one patient, two clients
    tables[ASSIGNMENT_TABLE] = assignment_table(dataclasses.replace(a, client=client))

    report = run_checks(tables, suites, tmp_path)
    assert {f.table for f in report.failures} == {name, ASSIGNMENT_TABLE}
    negative_failure = failures_of(report, name)
    assert [(f.expectation, f.column) for f in negative_failure] == [
        ("expect_column_distinct_values_to_contain_set", col)
    ]
    assert "both classes" in negative_failure[0].observed
    (overlap,) = failures_of(report, ASSIGNMENT_TABLE)
    assert (overlap.expectation, overlap.column) == (
        "expect_column_values_to_be_unique",
        "patient_hash",
    )
    assert overlap.observed.startswith(
        "rows of patients found in more than one (client, split): 2 of "
    )

    text = report_text(report)
    assert "expect_column_values_to_be_unique" in report.html_report.read_text(encoding="utf-8")
    assert str(PATIENT_BASE)[:7] not in text
    hashes = tables[ASSIGNMENT_TABLE]["patient_hash"]
    assert not [h for h in hashes if h in text]


def test_minimum_rows_and_label_domains_are_enforced(setup: Setup, tmp_path: Path) -> None:
    client = next(c for c in setup.federation.clients if "los" in c.objectives)
    table = client_partition_tables(setup.federation)[f"client_{client.client_id:02d}"]
    los = label_column("los")
    table.loc[table.index[0], los] = 0.0  # LOS must be > 0
    table.loc[table.index[1], "features_finite"] = False
    suite = client_partition_suite(
        "strict", [setup.federation.objective("los")], min_train_rows=10_000
    )
    report = run_checks({"strict": table}, {"strict": suite}, tmp_path)
    found = {(f.expectation, f.column) for f in report.failures}
    assert found == {
        ("expect_column_values_to_be_between", los),
        ("expect_column_values_to_be_in_set", "features_finite"),
    }
    # Too few labelled rows is a warning (a small site still trains); none would be refused.
    (rows,) = report.warnings
    assert rows.observed.startswith("at least 10000 labelled training rows: observed ")
    table[los] = float("nan")
    report = run_checks({"strict": table}, {"strict": suite}, tmp_path / "unlabelled")
    assert ("expect_table_row_count_to_be_between", los) in {
        (f.expectation, f.column) for f in report.failures
    }


def test_minimum_rows_per_class_is_configurable(setup: Setup, tmp_path: Path) -> None:
    fed = setup.federation
    client = next(c for c in fed.clients if fed.objective(c.objectives[0]).kind == "binary")
    table = client_partition_tables(fed)[f"client_{client.client_id:02d}"]
    objective = fed.objective(client.objectives[0])
    suite = client_partition_suite("classes", [objective], min_class_rows=10_000)
    report = run_checks({"classes": table}, {"classes": suite}, tmp_path)
    col = label_column(objective.name)
    assert [(f.expectation, f.column) for f in report.failures] == [
        ("expect_table_row_count_to_be_between", col)
    ] * 2
    assert [f.observed.split(":")[0] for f in report.failures] == [
        "training rows of class 0",
        "training rows of class 1",
    ]


def test_a_capped_federation_passes_and_its_assignment_matches_the_build(tmp_path: Path) -> None:
    cohort = make_cohort(300)
    config = DataConfig(clients=3, max_patients_per_client=60)
    federation = build_federation(cohort, PARTITION, config, seed=0)
    assignment = recompute_assignment(cohort, config, 0)
    assert len(assignment.patient) == sum(
        c.train.n + c.val.n + c.test.n for c in federation.clients
    )
    assert set(np.unique(assignment.split)) == {"train", "val", "test"}
    report = run_checks(*federation_checks(federation, assignment), tmp_path)
    assert report.passed, report.summary()
