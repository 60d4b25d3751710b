"""Run expectation suites on in-memory tables; report and stop on failure.

:func:`run_checks` validates each table against its suite in a fresh ephemeral Great
Expectations context (nothing is written outside ``report_dir``, nothing calls out), writes per
table the JSON validation result and the HTML page Great Expectations renders for it, plus an
``index.html`` and ``summary.json`` listing every failed expectation, and returns a plain
:class:`CheckReport`. :func:`require_checks_pass` turns a failed report into a
:class:`DataCheckError`, so a flow stops before any training.

Reports hold counts and observed aggregates, never row values: map expectations run with
:data:`RESULT_FORMAT` (no partial unexpected lists), and any value list a result might still
carry is removed before anything is written.
"""

from __future__ import annotations

import copy
import html
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from fedcare_core.errors import FedcareError

if TYPE_CHECKING:  # imported where used: importing Great Expectations takes seconds
    from great_expectations import ExpectationSuite

#: Result format of every validation: counts and percentages, no unexpected values listed.
#: ``BASIC``: ``SUMMARY`` adds only what :data:`REDACTED_RESULT_KEYS` removes (value counts, the
#: unexpected rows' index list and query), filtering the whole table per map expectation.
RESULT_FORMAT: dict[str, Any] = {
    "result_format": "BASIC",
    "partial_unexpected_count": 0,
    "include_unexpected_rows": False,
}

#: Result keys that can hold row values (and so identifiers); removed before writing.
REDACTED_RESULT_KEYS = frozenset(
    {
        "partial_unexpected_list",
        "partial_unexpected_counts",
        "partial_unexpected_index_list",
        "unexpected_list",
        "unexpected_index_list",
        "unexpected_index_query",
        "unexpected_index_column_names",
        "unexpected_rows",
        "unexpected_rows_query",
        "unexpected_rows_expectation",
        "partial_missing_list",
    }
)
#: Also removed: any other result key that looks like it holds rows or values.
_REDACTED_PATTERN = re.compile(r"list|rows|query|index")

#: Expectations whose ``column_list`` names the columns checked (elsewhere, e.g. in
#: ``expect_table_columns_to_match_ordered_list``, it is the expected value).
_MULTICOLUMN_TYPES = frozenset(
    {
        "expect_compound_columns_to_be_unique",
        "expect_select_column_values_to_be_unique_within_record",
        "expect_multicolumn_sum_to_equal",
    }
)

#: Longest observed-value text kept in a failure summary.
_MAX_OBSERVED_CHARS = 300

#: Name of the summary page written in ``report_dir``.
INDEX_HTML = "index.html"
#: Name of the machine-readable summary written in ``report_dir``.
SUMMARY_JSON = "summary.json"

#: One table's outcome: name, passed, expectations evaluated, expectations failed.
_TableStatus = tuple[str, bool, int, int]


@dataclass(frozen=True)
class Failure:
    """One failed expectation.

    Parameters
    ----------
    table
        The table validated (the key given to :func:`run_checks`).
    expectation
        Expectation type, e.g. ``"expect_column_values_to_be_in_set"``.
    column
        The column it concerns, or ``None`` for a table-level expectation.
    observed
        What was found, as counts or an aggregate (never row values).

    """

    table: str
    expectation: str
    column: str | None
    observed: str

    def __str__(self) -> str:
        where = f" on column {self.column!r}" if self.column else ""
        return f"{self.table}: {self.expectation}{where}: {self.observed}"


@dataclass(frozen=True)
class CheckReport:
    """The outcome of :func:`run_checks`.

    Parameters
    ----------
    passed
        True when every expectation of every table succeeded.
    failures
        Each failed expectation, table by table in the order given.
    tables
        The tables validated.
    n_expectations
        Expectations evaluated, all tables together.
    html_report
        The summary page (``index.html``), linking each table's rendered validation page.
    report_dir
        Folder holding every file written.
    warnings
        Failed expectations of ``warning`` severity (profile limits such as a column's share
        of missing values, calibrated on the published file): reported, never a refusal.

    """

    passed: bool
    failures: list[Failure]
    tables: tuple[str, ...]
    n_expectations: int
    html_report: Path
    report_dir: Path
    warnings: list[Failure] = field(default_factory=list)

    def summary(self) -> str:
        """One line per failed expectation, after a headline (warnings after the failures)."""
        warned = [f"  - warning: {f}" for f in self.warnings]
        if self.passed:
            note = f", {len(self.warnings)} warning(s)" if self.warnings else ""
            return "\n".join(
                [
                    f"data checks passed: {self.n_expectations} expectations on "
                    f"{len(self.tables)} table(s){note}; report {self.html_report}",
                    *warned,
                ]
            )
        failed_tables = len({f.table for f in self.failures})
        head = (
            f"data checks failed: {len(self.failures)} of {self.n_expectations} expectations "
            f"in {failed_tables} of {len(self.tables)} table(s); report {self.html_report}"
        )
        return "\n".join([head, *(f"  - {f}" for f in self.failures), *warned])


class DataCheckError(FedcareError):
    """Data failed its checks; the message names each failed expectation, table and column.

    Parameters
    ----------
    report
        The failed report.

    """

    def __init__(self, report: CheckReport) -> None:
        self.report = report
        super().__init__(report.summary())


def require_checks_pass(report: CheckReport) -> None:
    """Raise :class:`DataCheckError` unless ``report.passed``.

    Raises
    ------
    DataCheckError
        If any expectation failed.

    """
    if not report.passed:
        raise DataCheckError(report)


def run_checks(
    tables: Mapping[str, pd.DataFrame],
    suites: Mapping[str, ExpectationSuite],
    report_dir: str | Path,
    *,
    pages: bool = True,
) -> CheckReport:
    """Validate each table against its suite and write the reports.

    Parameters
    ----------
    tables
        Tables by name. Names become file names (characters other than letters, digits,
        ``_``, ``-`` and ``.`` are replaced).
    suites
        A suite for each table, under the same name. Suites are copied, never modified, so one
        suite may serve several tables or runs.
    report_dir
        Folder for the reports; created if needed. Per table ``<name>.json`` (the validation
        result) and ``<name>.html`` (its rendered page); ``index.html`` and ``summary.json``
        list the failures.
    pages
        Write each table's ``<name>.json`` and ``<name>.html``; ``False`` for a report that
        is thrown away (``index.html`` and ``summary.json`` only; the same checks run).

    Returns
    -------
    CheckReport
        Whether everything passed, and each failure.

    Raises
    ------
    ValueError
        If ``tables`` is empty, ``tables`` and ``suites`` do not name the same tables, or two
        names map to one file.

    """
    stems = _check_names(tables, suites)
    out = Path(report_dir)
    out.mkdir(parents=True, exist_ok=True)
    context, source = _ephemeral_context()
    failures: list[Failure] = []
    warnings: list[Failure] = []
    statuses: list[_TableStatus] = []
    suite_names: set[str] = set()
    for name, df in tables.items():
        result = _validate(context, source, name, df, suites[name], suite_names)
        failed = [r for r in result.results if not r.success]
        table_failures = [_failure(name, r) for r in failed if _is_critical(r)]
        failures.extend(table_failures)
        warnings.extend(_failure(name, r) for r in failed if not _is_critical(r))
        statuses.append((name, not table_failures, len(result.results), len(table_failures)))
        if pages:
            _write_table_report(out, stems[name], result)
    report = CheckReport(
        passed=not failures,
        failures=failures,
        tables=tuple(tables),
        n_expectations=sum(n for _, _, n, _ in statuses),
        html_report=out / INDEX_HTML,
        report_dir=out,
        warnings=warnings,
    )
    _write_summary(report, statuses, stems if pages else None)
    return report


def _check_names(
    tables: Mapping[str, pd.DataFrame], suites: Mapping[str, ExpectationSuite]
) -> dict[str, str]:
    """The report file stem of each table; raise unless tables and suites match one to one."""
    if not tables:
        raise ValueError("no tables to check")
    if set(tables) != set(suites):
        missing = sorted(set(tables) - set(suites))
        extra = sorted(set(suites) - set(tables))
        raise ValueError(f"tables without a suite: {missing}; suites without a table: {extra}")
    stems = {name: _file_stem(name) for name in tables}
    if len(set(stems.values())) != len(stems):
        raise ValueError(f"table names collide as file names: {sorted(stems)}")
    return stems


def _ephemeral_context() -> tuple[Any, Any]:
    """A fresh in-memory Great Expectations context and its pandas data source."""
    import great_expectations as gx
    from great_expectations.data_context.types.base import (
        DataContextConfig,
        InMemoryStoreBackendDefaults,
        ProgressBarsConfig,
    )

    # In memory only: no Data Docs site (the pages are rendered below), no analytics, no bars.
    config = DataContextConfig(
        store_backend_defaults=InMemoryStoreBackendDefaults(init_temp_docs_sites=False),
        analytics_enabled=False,
        progress_bars=ProgressBarsConfig(globally=False),
    )
    context = gx.get_context(mode="ephemeral", project_config=config)
    return context, context.data_sources.add_pandas(name="fedcare_checks")


def _validate(
    context: Any,
    source: Any,
    name: str,
    df: pd.DataFrame,
    suite: ExpectationSuite,
    suite_names: set[str],
) -> Any:
    """Run a copy of ``suite`` on ``df`` in ``context``; return the redacted result.

    ``suite_names`` holds the suite names already used in the context, and is updated.
    """
    import great_expectations as gx

    batch = source.add_dataframe_asset(name=name).add_batch_definition_whole_dataframe(
        name=f"{name}__whole"
    )
    # Suite names must be unique in a context; a suite serving several tables gets prefixes.
    suite_name = suite.name
    if suite_name in suite_names:
        suite_name = f"{name}__{suite_name}"
    suite_names.add(suite_name)
    added = context.suites.add(_copy_suite(suite, name=suite_name))
    definition = context.validation_definitions.add(
        gx.ValidationDefinition(name=f"{name}__validation", data=batch, suite=added)
    )
    result = definition.run(batch_parameters={"dataframe": df}, result_format=RESULT_FORMAT)
    _redact(result)
    return result


def _write_table_report(out: Path, stem: str, result: Any) -> None:
    """Write one table's validation result as JSON and as the page Great Expectations renders."""
    from great_expectations.render.renderer import ValidationResultsPageRenderer
    from great_expectations.render.view import DefaultJinjaPageView

    (out / f"{stem}.json").write_text(
        json.dumps(result.to_json_dict(), indent=2, default=str), encoding="utf-8"
    )
    document = ValidationResultsPageRenderer().render(result)
    (out / f"{stem}.html").write_text(DefaultJinjaPageView().render(document), encoding="utf-8")


def _write_summary(
    report: CheckReport, statuses: list[_TableStatus], stems: Mapping[str, str] | None
) -> None:
    """Write ``index.html`` (linking each table's page, if ``stems``) and ``summary.json``."""
    out = report.report_dir
    (out / INDEX_HTML).write_text(_index_html(report, statuses, stems), encoding="utf-8")
    (out / SUMMARY_JSON).write_text(
        json.dumps(
            {
                "passed": report.passed,
                "n_expectations": report.n_expectations,
                "tables": [
                    {"table": t, "passed": ok, "expectations": n, "failed": nf}
                    for t, ok, n, nf in statuses
                ],
                "failures": [f.__dict__ for f in report.failures],
                "warnings": [f.__dict__ for f in report.warnings],
            },
            indent=2,
        ),
        encoding="utf-8",
    )


def _file_stem(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "_"


def _copy_suite(suite: ExpectationSuite, name: str) -> ExpectationSuite:
    """A context-free copy of ``suite``: adding a suite to a context binds it and its items.

    An expectation holds its suite's save callback, so a plain deep copy of each copies the
    whole suite (n² copies); the memo keeps it uncopied, and the new suite rebinds each copy.
    """
    from great_expectations import ExpectationSuite

    expectations = []
    for expectation in suite.expectations:
        copied = copy.deepcopy(expectation, {id(suite): suite})
        copied.id = None
        expectations.append(copied)
    return ExpectationSuite(name=name, expectations=expectations, meta=dict(suite.meta))


def _redact(result: Any) -> None:
    """Drop every value list from each expectation result, in place."""
    for r in result.results:
        if isinstance(r.result, dict):
            for key in [k for k in r.result if _redacted(k)]:
                del r.result[key]


def _redacted(key: str) -> bool:
    return key in REDACTED_RESULT_KEYS or _REDACTED_PATTERN.search(key) is not None


def _short(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    text = " ".join(text.split())
    if len(text) > _MAX_OBSERVED_CHARS:
        text = text[: _MAX_OBSERVED_CHARS - 1] + "…"
    return text


def _exception_message(info: object) -> str | None:
    """The first exception message in a result's ``exception_info`` (flat or per metric)."""
    if not isinstance(info, dict):
        return None
    if info.get("raised_exception"):
        return str(info.get("exception_message") or "exception raised")
    for value in info.values():
        if isinstance(value, dict) and value.get("raised_exception"):
            return str(value.get("exception_message") or "exception raised")
    return None


def _is_critical(result: Any) -> bool:
    """Whether a failed expectation refuses the data (GX's default severity, ``critical``)."""
    severity = getattr(result.expectation_config, "severity", None)
    return str(getattr(severity, "value", severity) or "critical") == "critical"


def _failure(table: str, r: Any) -> Failure:
    config = r.expectation_config
    kwargs = dict(config.kwargs or {})
    column = kwargs.get("column")
    if column is None and "column_A" in kwargs:
        column = f"{kwargs['column_A']}, {kwargs.get('column_B')}"
    if column is None and config.type in _MULTICOLUMN_TYPES:
        column = ", ".join(str(c) for c in kwargs.get("column_list") or ())
    if column is None and isinstance(config.meta, dict):
        column = config.meta.get("column")
    message = _exception_message(r.exception_info)
    res: dict[str, Any] = r.result if isinstance(r.result, dict) else {}
    if message is not None:
        observed = f"could not be evaluated: {_short(message.splitlines()[0] if message else '')}"
    elif "unexpected_count" in res and "element_count" in res:
        n, total = int(res["unexpected_count"] or 0), int(res["element_count"] or 0)
        share = f" ({100.0 * n / total:.2f}%)" if total else ""
        observed = f"{n} of {total} values unexpected{share}"
        if res.get("missing_count"):  # map expectations skip missing values
            observed += f"; {res['missing_count']} missing, not checked"
        if "mostly" in kwargs:
            observed += f"; required share ≥ {kwargs['mostly']}"
    elif "missing_count" in res:
        observed = f"{res['missing_count']} expected value(s) absent"
    elif isinstance(res.get("details"), dict) and "mismatched" in res["details"]:
        observed = f"mismatched {_short(res['details']['mismatched'])}"
    elif "observed_value" in res:
        observed = f"observed {_short(res['observed_value'])}"
    else:
        observed = "failed"
    if isinstance(config.meta, dict) and config.meta.get("check"):
        observed = f"{config.meta['check']}: {observed}"
    return Failure(
        table=table,
        expectation=str(config.type),
        column=None if column is None else str(column),
        observed=observed,
    )


def _index_html(
    report: CheckReport, statuses: list[_TableStatus], stems: Mapping[str, str] | None
) -> str:
    esc = html.escape
    verdict = "PASSED" if report.passed else "FAILED"

    def name(table: str) -> str:
        return (
            esc(table) if stems is None else f"<a href='{esc(stems[table])}.html'>{esc(table)}</a>"
        )

    rows = "\n".join(
        f"<tr><td>{name(t)}</td>"
        f"<td>{'passed' if ok else 'FAILED'}</td><td>{n}</td><td>{nf}</td></tr>"
        for t, ok, n, nf in statuses
    )
    failure_rows = "\n".join(
        f"<tr><td>{esc(f.table)}</td><td><code>{esc(f.expectation)}</code></td>"
        f"<td>{esc(f.column or '(table)')}</td><td>{esc(f.observed)}</td></tr>"
        for f in report.failures
    )
    failures = (
        "<p>No expectation failed.</p>"
        if report.passed
        else (
            "<table border='1' cellpadding='4'><tr><th>table</th><th>expectation</th>"
            f"<th>column</th><th>observed</th></tr>\n{failure_rows}\n</table>"
        )
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>FedCARE data checks: {verdict}</title></head>
<body>
<h1>FedCARE data checks: {verdict}</h1>
<p>{report.n_expectations} expectations on {len(report.tables)} table(s);
{len(report.failures)} failed. Each table's page is rendered by Great Expectations.</p>
<h2>Tables</h2>
<table border='1' cellpadding='4'><tr><th>table</th><th>result</th><th>expectations</th>
<th>failed</th></tr>
{rows}
</table>
<h2>Failed expectations</h2>
{failures}
</body></html>
"""
