"""run_checks' contract: matching names, reusable suites, failures reported and raised."""

from __future__ import annotations

import json
from pathlib import Path

import great_expectations.expectations as gxe
import pandas as pd
import pytest
from great_expectations import ExpectationSuite

from data_checks.validate import (
    INDEX_HTML,
    SUMMARY_JSON,
    CheckReport,
    DataCheckError,
    Failure,
    require_checks_pass,
    run_checks,
)
from fedcare_core.errors import FedcareError


def small_suite() -> ExpectationSuite:
    return ExpectationSuite(
        name="small",
        expectations=[
            gxe.ExpectColumnValuesToBeBetween(column="x", min_value=0, max_value=10),
            gxe.ExpectColumnValuesToNotBeNull(column="x"),
        ],
    )


def test_tables_and_suites_must_match(tmp_path: Path) -> None:
    df = pd.DataFrame({"x": [1.0]})
    with pytest.raises(ValueError, match="no tables"):
        run_checks({}, {}, tmp_path)
    with pytest.raises(ValueError, match="without a suite"):
        run_checks({"a": df, "b": df}, {"a": small_suite()}, tmp_path)
    with pytest.raises(ValueError, match="collide"):
        run_checks({"a b": df, "a_b": df}, {"a b": small_suite(), "a_b": small_suite()}, tmp_path)


def test_one_suite_serves_several_tables_and_runs_and_failures_raise(tmp_path: Path) -> None:
    suite = small_suite()
    good = pd.DataFrame({"x": [1.0, 2.0, 3.0]})
    bad = pd.DataFrame({"x": [1.0, 99.0, None, 4.0]})
    ok = run_checks({"good": good}, {"good": suite}, tmp_path / "first")
    assert ok.passed and ok.failures == [] and ok.n_expectations == 2
    require_checks_pass(ok)  # no error

    report = run_checks({"good": good, "bad": bad}, {"good": suite, "bad": suite}, tmp_path / "2")
    assert not report.passed
    assert report.failures == [
        Failure(
            "bad",
            "expect_column_values_to_be_between",
            "x",
            "1 of 4 values unexpected (25.00%); 1 missing, not checked",
        ),
        Failure(
            "bad", "expect_column_values_to_not_be_null", "x", "1 of 4 values unexpected (25.00%)"
        ),
    ]
    assert len(suite.expectations) == 2 and suite.id is None  # the suite given is untouched

    with pytest.raises(DataCheckError) as err:
        require_checks_pass(report)
    assert isinstance(err.value, FedcareError)
    assert err.value.report is report
    message = str(err.value)
    assert "2 of 4 expectations in 1 of 2 table(s)" in message
    assert "bad: expect_column_values_to_be_between on column 'x'" in message
    assert str(report.html_report) in message

    files = {p.name for p in report.report_dir.iterdir()}
    assert files == {INDEX_HTML, SUMMARY_JSON, "good.json", "good.html", "bad.json", "bad.html"}
    summary = json.loads((report.report_dir / SUMMARY_JSON).read_text(encoding="utf-8"))
    assert summary["passed"] is False and len(summary["failures"]) == 2
    result = json.loads((report.report_dir / "bad.json").read_text(encoding="utf-8"))
    assert result["success"] is False
    assert all("partial_unexpected_list" not in r["result"] for r in result["results"])
    assert "99" not in json.dumps([r["result"] for r in result["results"]])


def test_a_missing_column_is_a_failure_not_a_crash(tmp_path: Path) -> None:
    report = run_checks({"t": pd.DataFrame({"y": [1]})}, {"t": small_suite()}, tmp_path)
    assert [f.column for f in report.failures] == ["x", "x"]
    assert all(f.observed.startswith("could not be evaluated") for f in report.failures)


def test_passed_report_summary() -> None:
    report = CheckReport(
        passed=True,
        failures=[],
        tables=("t",),
        n_expectations=3,
        html_report=Path("r/index.html"),
        report_dir=Path("r"),
    )
    assert report.summary().startswith("data checks passed: 3 expectations on 1 table(s)")


def test_a_thrown_away_report_runs_every_check_and_writes_no_table_page(tmp_path: Path) -> None:
    suite = small_suite()
    bad = pd.DataFrame({"x": [1.0, 99.0, None, 4.0]})
    kept = run_checks({"bad": bad}, {"bad": suite}, tmp_path / "kept")
    thrown = run_checks({"bad": bad}, {"bad": suite}, tmp_path / "thrown", pages=False)
    assert thrown.failures == kept.failures and thrown.n_expectations == kept.n_expectations
    assert {p.name for p in thrown.report_dir.iterdir()} == {INDEX_HTML, SUMMARY_JSON}
    index = (thrown.report_dir / INDEX_HTML).read_text(encoding="utf-8")
    assert "<a href" not in index and "expect_column_values_to_be_between" in index


def test_a_large_suite_is_copied_not_bound_to_the_context(tmp_path: Path) -> None:
    from data_checks.declared import DeclaredChecks
    from fedcare_core.data.diabetes130.dataset import SOURCE

    checks = DeclaredChecks(SOURCE)
    (suite,) = checks.suites("refuse").values()
    before = suite.to_json_dict()
    tiny = Path(__file__).parents[1] / "fedcare_core" / "data" / "fixtures"
    (table,) = checks.read(tiny / "diabetic_data_tiny.csv").values()
    for run in ("first", "second"):  # one suite serves two runs: ids are the context's copies'
        report = run_checks({"t": table}, {"t": suite}, tmp_path / run, pages=False)
        assert report.passed and report.n_expectations == len(suite.expectations) == 101
    assert suite.to_json_dict() == before
    assert all(e.id is None for e in suite.expectations)
