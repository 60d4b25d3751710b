"""The one validation path of a dataset's source tables, for every entry point.

``fedcare run``, ``fedcare experiment`` and both flows check the data the same way, so they
accept and refuse the same files: the loader's own checks (parsing, clinical plausibility,
known value sets, cross-table consistency, truncation; errors name the file, column and rows)
and the Great Expectations suites on the raw tables (:mod:`data_checks.suites`; the report
names table, column and counts). :func:`checked_dataset` runs both, the loader first since its
messages are the more precise (without a report to keep, the suites' expectations run vectorised
first, and Great Expectations, seconds to import, only when one may fail: the same files are
refused, with the same message); the flows run the suites as their own task first, to attach the
report, then the loader. A single run (``fedcare run``, the ``fedcare`` flow) then checks the
federation it built, every client's partition and patient disjointness
(:func:`checked_federation`), before training.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, cast

import pandas as pd

from data_checks.tables import recompute_assignment
from data_checks.validate import CheckReport, DataCheckError, run_checks
from fedcare_core.config import DataConfig, ExperimentConfig
from fedcare_core.data.clients import Federation
from fedcare_core.data.loading import LoadedDataset, load_dataset
from fedcare_core.data.registry import get_dataset
from fedcare_core.run.pipeline import prepare_federation

if TYPE_CHECKING:  # Great Expectations (seconds to import) only where a suite is validated by it
    from great_expectations import ExpectationSuite

    from data_checks.datasets import RawChecks

__all__ = [
    "check_raw_tables",
    "checked_dataset",
    "checked_federation",
    "raw_source",
    "raw_suites",
    "read_raw_tables",
]


def raw_source(dataset: str, data_dir: str | Path | None) -> Path:
    """Where the loader will read ``dataset`` from, resolved as ``load_dataset`` does.

    Parameters
    ----------
    dataset
        ``"diabetes130"`` or ``"mimic3"``.
    data_dir
        The folder or file given (``None``: ``$FEDCARE_DATA_DIR``, then the download cache
        for Diabetes 130).

    Returns
    -------
    Path
        A folder or file the raw-table readers accept.

    Raises
    ------
    DataError
        If no data location can be found.
    ConfigError
        If the dataset is unknown.
    """
    from fedcare_core.data.paths import checked_data_dir

    spec = get_dataset(dataset)
    looks_elsewhere = bool(spec.definition_text)  # beside a definition file
    return spec.load_source().locate(checked_data_dir(data_dir, looks_elsewhere=looks_elsewhere))


def _checks(dataset: str) -> RawChecks | None:
    return cast("RawChecks | None", get_dataset(dataset).load_checks())


def read_raw_tables(dataset: str, source: Path) -> dict[str, pd.DataFrame]:
    """The raw tables of ``dataset`` as the suites see them (none: a dataset without checks)."""
    checks = _checks(dataset)
    return {} if checks is None else checks.read(source)


def raw_suites(dataset: str, unseen_categories: str = "refuse") -> dict[str, ExpectationSuite]:
    """The suites of ``dataset``'s raw tables, keyed like :func:`read_raw_tables`."""
    checks = _checks(dataset)
    return {} if checks is None else checks.suites(unseen_categories)


def check_raw_tables(
    dataset: str,
    data_dir: str | Path | None,
    report_dir: str | Path,
    *,
    unseen_categories: str = "refuse",
    pages: bool = True,
) -> CheckReport:
    """Read the raw tables and run their suites; the caller decides what a failure means.

    Parameters
    ----------
    dataset
        The dataset.
    data_dir
        Its folder or file (see :func:`raw_source`).
    report_dir
        Where the HTML and JSON reports are written.
    unseen_categories
        The configuration's ``data.unseen_categories`` (see :func:`raw_suites`).
    pages
        Write each table's rendered page (``False``: a report that is thrown away).

    Returns
    -------
    CheckReport
        Passed or not.

    Raises
    ------
    DataError
        If a table cannot be found or read.
    """
    tables = read_raw_tables(dataset, raw_source(dataset, data_dir))
    return run_checks(tables, raw_suites(dataset, unseen_categories), report_dir, pages=pages)


def checked_dataset(
    config: DataConfig,
    data_dir: str | Path | None,
    *,
    verify_checksum: bool = True,
    report_dir: str | Path | None = None,
) -> LoadedDataset:
    """Load ``config.dataset`` through every check: the loader's, then the suites'.

    Parameters
    ----------
    config
        Dataset, label options and the unseen-category policy.
    data_dir
        Folder or file (``None``: ``$FEDCARE_DATA_DIR`` or the download cache).
    verify_checksum
        Check the Diabetes 130 file's SHA-256.
    report_dir
        Where the suites' report is kept; ``None``: no report is kept, and the suites'
        expectations are run vectorised first (:func:`_raw_tables_certainly_pass`); only if
        one may fail do they run in Great Expectations, in a temporary folder, removed (a
        failure's message then lists every failed expectation itself).

    Returns
    -------
    LoadedDataset
        The cohort, its partition and its source.

    Raises
    ------
    DataError
        From the loader: the file, column and rows at fault.
    DataCheckError
        If an expectation failed; the message names the source, the table, the column and
        the counts.
    """
    loaded = load_dataset(config, data_dir, verify_checksum=verify_checksum)
    if report_dir is None and _raw_tables_certainly_pass(config, data_dir):
        return loaded
    if report_dir is not None:
        report = check_raw_tables(
            config.dataset, data_dir, report_dir, unseen_categories=config.unseen_categories
        )
        _require(report, loaded.source, keep_report=True)
        return loaded
    with tempfile.TemporaryDirectory(prefix="fedcare-checks-") as tmp:
        report = check_raw_tables(
            config.dataset,
            data_dir,
            tmp,
            unseen_categories=config.unseen_categories,
            pages=False,  # the report is removed: the message lists the failures
        )
        _require(report, loaded.source, keep_report=False)
    return loaded


def _raw_tables_certainly_pass(config: DataConfig, data_dir: str | Path | None) -> bool:
    """Whether every critical expectation of the raw suites passes, run without Great Expectations.

    The suites' expectations are run vectorised (:mod:`data_checks.expectations`) where they
    are described without Great Expectations (Diabetes 130's raw file); ``False`` when one
    fails or cannot be judged so, or for another dataset: :func:`checked_dataset` then runs
    the suites in Great Expectations, which decide and word the refusal.
    """
    checks = _checks(config.dataset)
    if checks is None:
        return True  # the loader's checks are the dataset's only ones
    source = raw_source(config.dataset, data_dir)
    return checks.certainly_pass(source, config.unseen_categories)


def checked_federation(loaded: LoadedDataset, config: ExperimentConfig) -> Federation:
    """Build the clients and run the partition suites on them (as the flow's partition task).

    Parameters
    ----------
    loaded
        The checked dataset.
    config
        The experiment configuration (clients, ρ, splits, seed).

    Returns
    -------
    Federation
        The clients, every one with the rows, labels and classes it needs.

    Raises
    ------
    DataError
        From building the federation (e.g. a client without a positive label).
    DataCheckError
        If a partition expectation failed (e.g. too few labelled training rows, rows in two
        places); the report is temporary, so the message lists the failures.
    """
    from data_checks.suites import federation_checks

    federation = prepare_federation(loaded.cohort, loaded.partition, config, loaded.source)
    assignment = recompute_assignment(loaded.cohort, config.data, config.seed)
    tables, suites = federation_checks(federation, assignment)
    with tempfile.TemporaryDirectory(prefix="fedcare-checks-") as tmp:
        _require(run_checks(tables, suites, tmp, pages=False), loaded.source, keep_report=False)
    return federation


class SourceCheckError(DataCheckError):
    """A source table failed its suite; the message names the source first."""

    def __init__(self, report: CheckReport, source: str, *, keep_report: bool) -> None:
        self.source = source
        self.keep_report = keep_report
        super().__init__(report)

    def __str__(self) -> str:
        """One line: the source, the first failed expectation and how many more failed."""
        failures = self.report.failures
        line = f"{self.source}: data checks failed: {failures[0]}"
        if len(failures) > 1:
            line += f" (and {len(failures) - 1} more failed expectation(s))"
        if self.keep_report:
            line += f"; report {self.report.html_report}"
        return line


def _require(report: CheckReport, source: str, *, keep_report: bool) -> None:
    """Raise :class:`SourceCheckError` unless the report passed."""
    if not report.passed:
        raise SourceCheckError(report, source, keep_report=keep_report)
