"""Data tasks: check the raw tables, load the cohort, build and check the federation.

A failed check raises :class:`data_checks.validate.DataCheckError` (its message names every
failed expectation, table and column) before any training starts; the report folder (HTML and
JSON) is kept either way so the flow can attach it to the Prefect and MLflow runs.
"""

from __future__ import annotations

from pathlib import Path

from prefect import task

from data_checks.source_checks import SourceCheckError, check_raw_tables
from data_checks.suites import federation_checks
from data_checks.tables import recompute_assignment
from data_checks.validate import CheckReport, DataCheckError, run_checks
from fedcare_core.config import DataConfig, ExperimentConfig
from fedcare_core.data.clients import Federation
from fedcare_core.data.cohort import Cohort
from fedcare_core.data.loading import LoadedDataset, load_dataset
from fedcare_core.data.partition import FeaturePartition
from fedcare_core.errors import FedcareError
from fedcare_core.run.pipeline import prepare_federation
from tasks.common import IO_RETRIES, IO_RETRY_DELAY_S, NO_CACHE, retry_on_io_error, run_logger


@task(
    name="validate-raw-tables",
    retries=IO_RETRIES,
    retry_delay_seconds=IO_RETRY_DELAY_S,
    retry_condition_fn=retry_on_io_error,
    cache_policy=NO_CACHE,
    persist_result=False,
)
def validate_raw_task(
    data: DataConfig, data_dir: str | None, report_dir: Path, verify_checksum: bool = True
) -> CheckReport:
    """Read the raw source tables and run their Great Expectations suites; fail on a failure.

    Parameters
    ----------
    data
        The dataset, its label options and ``unseen_categories``.
    data_dir
        Its folder or file (see :func:`data_checks.source_checks.raw_source`).
    report_dir
        Where the HTML and JSON reports are written (kept either way).
    verify_checksum
        Whether the loader checks the Diabetes 130 file's SHA-256 (for the failure's line).

    Returns
    -------
    CheckReport
        A report that passed.

    Raises
    ------
    DataError
        If a table cannot be found or read.
    DataRefused
        If an expectation failed (the task run fails): its first line is the one ``fedcare
        run`` prints for the same file, the failed expectations follow; it carries the report.
    """
    report = check_raw_tables(
        data.dataset, data_dir, report_dir, unseen_categories=data.unseen_categories
    )
    run_logger().info("%s", report.summary().splitlines()[0])
    if not report.passed:
        raise DataRefused(report, _refusal_line(report, data, data_dir, verify_checksum))
    return report


class DataRefused(DataCheckError):
    """Data refused by its checks: the line every entry shows, and the report behind it."""

    def __init__(self, report: CheckReport, line: str) -> None:
        super().__init__(report)
        self.line = line

    def __str__(self) -> str:
        """The line, then the failed expectations (table, column, counts; never values)."""
        return f"{self.line}\n{self.report.summary()}"


def _refusal_line(
    report: CheckReport, data: DataConfig, data_dir: str | None, verify_checksum: bool
) -> str:
    """The one line ``fedcare run`` prints for data that failed ``report``'s suites.

    ``fedcare run`` runs the loader's checks first, which name the file, column and rows; only
    data they accept reaches the suites, whose line names the source and the first failed
    expectation. The same order gives the same line here.
    """
    try:
        loaded = load_dataset(data, data_dir, verify_checksum=verify_checksum)
    except FedcareError as exc:
        return str(exc)
    return str(SourceCheckError(report, loaded.source, keep_report=True))


@task(
    name="load-dataset",
    retries=IO_RETRIES,
    retry_delay_seconds=IO_RETRY_DELAY_S,
    retry_condition_fn=retry_on_io_error,
    cache_policy=NO_CACHE,
    persist_result=False,
)
def load_dataset_task(
    config: ExperimentConfig, data_dir: str | None, verify_checksum: bool = True
) -> LoadedDataset:
    """Load the cohort and its default feature partition (``fedcare_core.data.loading``).

    Parameters
    ----------
    config
        Names the dataset and label options.
    data_dir
        Folder or file (``None``: ``$FEDCARE_DATA_DIR`` or the download cache).
    verify_checksum
        Check the Diabetes 130 file's SHA-256.

    Returns
    -------
    LoadedDataset
        Cohort, partition and source file.
    """
    loaded = load_dataset(config.data, data_dir, verify_checksum=verify_checksum)
    run_logger().info(
        "loaded %s: %d rows, %d features",
        config.data.dataset,
        loaded.cohort.n_rows,
        loaded.cohort.features.shape[1],
    )
    return loaded


@task(name="build-federation", cache_policy=NO_CACHE, persist_result=False)
def partition_task(
    cohort: Cohort, partition: FeaturePartition, config: ExperimentConfig, source: str | None
) -> Federation:
    """Apply ρ, assign patients to clients and splits, encode each client's features.

    Parameters
    ----------
    cohort, partition
        From :func:`load_dataset_task`.
    config
        The experiment configuration (clients, ρ, split, seed).
    source
        The data file, for error messages.

    Returns
    -------
    Federation
        The clients.
    """
    return prepare_federation(cohort, partition, config, source)


@task(name="validate-partitions", cache_policy=NO_CACHE, persist_result=False)
def validate_partitions_task(
    federation: Federation, cohort: Cohort, config: ExperimentConfig, report_dir: Path
) -> CheckReport:
    """Check every client's partition and that no patient is in two places.

    Parameters
    ----------
    federation
        The built clients.
    cohort
        The cohort they were built from (the patient assignment is recomputed from it; patient
        keys are hashed with a per-run salt and never written).
    config
        The configuration the federation was built with.
    report_dir
        Where the reports are written.

    Returns
    -------
    CheckReport
        Passed or not.
    """
    assignment = recompute_assignment(cohort, config.data, config.seed)
    tables, suites = federation_checks(federation, assignment)
    report = run_checks(tables, suites, report_dir)
    run_logger().info("%s", report.summary().splitlines()[0])
    return report
