"""Retry only on I/O failures; the validation artifact names failures, never values."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from data_checks.validate import CheckReport, Failure
from fedcare_core.errors import DataError
from tasks.artifacts import validation_markdown
from tasks.common import retry_on_io_error


def _failed_with(exc: BaseException) -> SimpleNamespace:
    def result() -> None:
        raise exc

    return SimpleNamespace(result=result)


def test_retry_on_io_error_only() -> None:
    assert retry_on_io_error(None, None, _failed_with(OSError("disk")))
    assert retry_on_io_error(None, None, _failed_with(ConnectionError("server")))
    assert not retry_on_io_error(None, None, _failed_with(DataError("bad column")))
    assert not retry_on_io_error(None, None, _failed_with(ValueError("bug")))


def test_validation_markdown_lists_failures(tmp_path: Path) -> None:
    report = CheckReport(
        passed=False,
        failures=[
            Failure("diabetes130_raw", "expect_column_values_to_be_in_set", "readmitted", "1 of 9"),
            Failure("client_01", "expect_table_row_count_to_be_between", None, "observed 0"),
        ],
        tables=("diabetes130_raw", "client_01"),
        n_expectations=12,
        html_report=tmp_path / "index.html",
        report_dir=tmp_path,
    )
    text = validation_markdown(report, "raw tables", "run abc, artifacts/validation/raw")
    assert text.startswith("# Data checks FAILED: raw tables")
    assert "| diabetes130_raw | `expect_column_values_to_be_in_set` | readmitted | 1 of 9 |" in text
    assert "| (table) |" in text
    assert str(tmp_path / "index.html") in text and "artifacts/validation/raw" in text
