"""Data tasks through ``.fn``: raw-table checks, partitioning and partition checks."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from data_checks.source_checks import raw_source
from data_checks.validate import DataCheckError
from fedcare_core.config import DataConfig, ExperimentConfig
from fedcare_core.errors import ConfigError, DataError
from tasks.data import DataRefused, partition_task, validate_partitions_task, validate_raw_task
from tests.fedcare_core.synthetic import PARTITION, make_cohort

TINY_CSV = (
    Path(__file__).parents[1] / "fedcare_core" / "data" / "fixtures" / "diabetic_data_tiny.csv"
)


def write_clean_table(folder: Path) -> pd.DataFrame:
    """The tiny fixture with its few gaps filled, so every raw expectation holds."""
    df = pd.read_csv(TINY_CSV, dtype=str, keep_default_na=False)
    df.loc[df["race"] == "?", "race"] = "Caucasian"
    df.loc[df["diag_2"] == "?", "diag_2"] = "250"
    folder.mkdir(parents=True, exist_ok=True)
    df.to_csv(folder / "diabetic_data.csv", index=False)
    return df


def test_raw_source_follows_the_loader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert raw_source("diabetes130", tmp_path) == tmp_path
    monkeypatch.setenv("FEDCARE_DATA_DIR", str(tmp_path))
    assert raw_source("diabetes130", None) == tmp_path
    monkeypatch.delenv("FEDCARE_DATA_DIR")
    monkeypatch.setenv("FEDCARE_CACHE_DIR", str(tmp_path / "empty-cache"))
    with pytest.raises(DataError, match="no data folder given for diabetes130"):
        raw_source("diabetes130", None)
    with pytest.raises(DataError, match="credentialed"):
        raw_source("mimic3", None)
    with pytest.raises(ConfigError, match="unknown dataset"):
        raw_source("nope", tmp_path)


def test_raw_checks_pass_on_a_good_table_and_name_the_corruption(tmp_path: Path) -> None:
    good = tmp_path / "good"
    df = write_clean_table(good)
    data = ExperimentConfig().data
    report = validate_raw_task.fn(data, str(good), tmp_path / "report-good", False)
    assert report.passed, report.summary()
    assert report.html_report.is_file()

    bad = tmp_path / "bad"
    bad.mkdir()
    df.loc[3, "readmitted"] = "MAYBE"
    df.to_csv(bad / "diabetic_data.csv", index=False)
    with pytest.raises(DataRefused) as err:
        validate_raw_task.fn(data, str(bad), tmp_path / "report-bad", False)
    # The line `fedcare run` prints (the loader names file, column and rows), then the suites'.
    line, *expectations = str(err.value).splitlines()
    assert line == (
        f"file {bad / 'diabetic_data.csv'}; column 'readmitted'; row 4: "
        "readmitted must be one of NO, <30, >30"
    )
    assert "expect_column_values_to_be_in_set on column 'readmitted'" in "\n".join(expectations)
    assert not err.value.report.passed and err.value.report.html_report.is_file()
    assert isinstance(err.value, DataCheckError)


def test_missing_file_is_a_data_error(tmp_path: Path) -> None:
    with pytest.raises(DataError):
        validate_raw_task.fn(ExperimentConfig().data, str(tmp_path / "absent"), tmp_path / "r")


def test_partition_and_its_checks(tmp_path: Path) -> None:
    cohort = make_cohort(300)
    config = ExperimentConfig(data=DataConfig(clients=3))
    federation = partition_task.fn(cohort, PARTITION, config, None)
    assert len(federation.clients) == 3
    report = validate_partitions_task.fn(federation, cohort, config, tmp_path)
    assert report.passed, report.summary()
    assert set(report.tables) == {"client_00", "client_01", "client_02", "patient_assignment"}
    html = report.html_report.read_text()
    assert "FedCARE data checks: PASSED" in html
