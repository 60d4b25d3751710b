"""Prefect artifacts: the validation report (summary, failed expectations, where the HTML is)."""

from __future__ import annotations

from prefect import task
from prefect.artifacts import create_markdown_artifact

from data_checks.validate import CheckReport
from tasks.common import NO_CACHE

#: Longest failure list shown in an artifact (the HTML report has them all).
MAX_FAILURES_SHOWN = 50


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def validation_markdown(report: CheckReport, stage: str, mlflow_location: str | None) -> str:
    """The validation report as Markdown for a Prefect artifact.

    Parameters
    ----------
    report
        The checks' outcome.
    stage
        What was checked (``raw tables``, ``client partitions (fedcare, seed 0)``).
    mlflow_location
        Where the same report is kept in MLflow (a run's artifact folder), if anywhere.

    Returns
    -------
    str
        A headline, the failed expectations as a table (table, expectation, column, observed
        counts; never row values), and the location of the HTML report.
    """
    verdict = "passed" if report.passed else "FAILED"
    lines = [
        f"# Data checks {verdict}: {stage}",
        "",
        f"{report.n_expectations} expectations on {len(report.tables)} table(s); "
        f"{len(report.failures)} failed.",
        "",
    ]
    if report.failures:
        lines += ["| table | expectation | column | observed |", "| --- | --- | --- | --- |"]
        for f in report.failures[:MAX_FAILURES_SHOWN]:
            lines.append(
                f"| {_cell(f.table)} | `{f.expectation}` | {_cell(f.column or '(table)')} | "
                f"{_cell(f.observed)} |"
            )
        hidden = len(report.failures) - MAX_FAILURES_SHOWN
        if hidden > 0:
            lines.append(f"\n… and {hidden} more in the HTML report.")
        lines.append("")
    lines.append(f"HTML report (rendered by Great Expectations): `{report.html_report}`")
    if mlflow_location:
        lines.append(f"\nAlso in MLflow: {mlflow_location}")
    return "\n".join(lines) + "\n"


@task(name="validation-artifact", cache_policy=NO_CACHE, persist_result=False)
def validation_artifact_task(
    report: CheckReport, stage: str, key: str, mlflow_location: str | None = None
) -> None:
    """Keep the validation report as a Prefect Markdown artifact of the flow run.

    Parameters
    ----------
    report, stage, mlflow_location
        See :func:`validation_markdown`.
    key
        Artifact key (lower-case letters, digits and dashes), e.g. ``validation-raw``.
    """
    create_markdown_artifact(
        key=key,
        markdown=validation_markdown(report, stage, mlflow_location),
        description=f"FedCARE data checks: {stage}",
    )
