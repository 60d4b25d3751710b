"""Prefect artifacts: the validation report, and a flow run's results table.

The validation artifact gives the checks' summary, the failed expectations and where the HTML
report is; the results artifact one row per algorithm × seed with its test metrics, registry
version and a link to its MLflow run (:mod:`fedcare.tracking.links`).

A flow run holds one artifact per key (:func:`keep_markdown_artifact`). Prefect's artifact
creation is not idempotent: its client sends the POST again after a 503 (the stack's busy
SQLite database) or a read timeout, and a retried task creates again, each time a second,
identical artifact. So each key's artifact is updated when the flow run has one, created
otherwise, and any other of that key in the flow run is deleted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from contextlib import suppress
from typing import Any, cast
from uuid import UUID

from prefect import task
from prefect.artifacts import create_markdown_artifact
from prefect.runtime import flow_run as runtime_flow_run

from data_checks.validate import CheckReport
from fedcare.tracking.links import run_url
from fedcare_core.evaluation.clinical_rows import (
    CLINICAL_HEAD,
    clinical_rows,
    length_of_stay_lines,
)
from tasks.common import NO_CACHE

#: Longest failure list shown in an artifact (the HTML report has them all).
_MAX_FAILURES_SHOWN = 50
#: How a metric is headed in the results table (its unit); others are shown by name.
_METRIC_LABELS: Mapping[str, str] = {"auroc": "AUROC", "mae_days": "MAE (days)"}


def _flow_run_artifacts(client: Any, key: str, flow_run_id: str) -> list[Any]:
    """The artifacts of ``key`` in the flow run, newest first."""
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
        ArtifactFilterKey,
    )
    from prefect.client.schemas.sorting import ArtifactSort

    found = client.read_artifacts(
        artifact_filter=ArtifactFilter(
            key=ArtifactFilterKey(any_=[key]),
            flow_run_id=ArtifactFilterFlowRunId(any_=[UUID(flow_run_id)]),
        ),
        sort=ArtifactSort.CREATED_DESC,
    )
    return list({a.id: a for a in found}.values())  # one entry per artifact


def _create(key: str, markdown: str, description: str) -> UUID:
    """A new Markdown artifact of the current run (from synchronous code: its id)."""
    return cast(UUID, create_markdown_artifact(key=key, markdown=markdown, description=description))


def keep_markdown_artifact(key: str, markdown: str, description: str) -> UUID:
    """The flow run's one Markdown artifact ``key``, with this text (see the module docstring).

    Parameters
    ----------
    key
        Artifact key (lower-case letters, digits and dashes).
    markdown, description
        Its text and description.

    Returns
    -------
    uuid.UUID
        The artifact kept. Outside a flow run (no flow run id) one is simply created.
    """
    from prefect import get_client
    from prefect.client.schemas.actions import ArtifactUpdate
    from prefect.exceptions import ObjectNotFound

    flow_run_id = runtime_flow_run.id
    if not flow_run_id:
        return _create(key, markdown, description)
    with get_client(sync_client=True) as client:
        existing = _flow_run_artifacts(client, key, flow_run_id)
        if existing:
            kept: UUID = existing[0].id
            client.update_artifact(kept, ArtifactUpdate(data=markdown, description=description))
        else:
            kept = _create(key, markdown, description)
        for extra in _flow_run_artifacts(client, key, flow_run_id):
            if extra.id != kept:
                with suppress(ObjectNotFound):  # gone already (a retried DELETE)
                    client.delete_artifact(extra.id)
    return kept


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
        for f in report.failures[:_MAX_FAILURES_SHOWN]:
            lines.append(
                f"| {_cell(f.table)} | `{f.expectation}` | {_cell(f.column or '(table)')} | "
                f"{_cell(f.observed)} |"
            )
        hidden = len(report.failures) - _MAX_FAILURES_SHOWN
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
    keep_markdown_artifact(
        key, validation_markdown(report, stage, mlflow_location), f"FedCARE data checks: {stage}"
    )


def _number(value: Any) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    return f"{float(value):.4f}"


def _run_link(tracking_uri: str, experiment_id: str, run_id: str, text: str) -> str:
    url = run_url(tracking_uri, experiment_id, run_id)
    return f"[{text}]({url})" if url is not None else f"`{run_id}`"


def _registry_cell(run: Mapping[str, Any]) -> str:
    parts = []
    reg = run.get("registry")
    if reg:
        champion = " (champion)" if reg.get("promoted") else ""
        parts.append(f"`{_cell(str(reg['model']))}` v{reg['version']}{champion}")
    clients = run.get("client_models") or []
    if clients:
        champions = sum(bool(c.get("promoted")) for c in clients)
        versions = sorted({int(c["version"]) for c in clients})
        shown = ", ".join(f"v{v}" for v in versions)
        parts.append(f"{len(clients)} client models ({shown}; {champions} new champions)")
    return "; ".join(parts) if parts else "—"


def results_markdown(
    dataset: str,
    runs: Sequence[Mapping[str, Any]],
    tracking_uri: str,
    experiment_id: str,
    parent_run_id: str,
) -> str:
    """A flow run's results as a Markdown table, each row linked to its MLflow run.

    Parameters
    ----------
    dataset
        The dataset trained on.
    runs
        One summary per algorithm × seed (:func:`flows.parent_run.run_summary`, with
        ``registry`` when its backbone was registered).
    tracking_uri, experiment_id, parent_run_id
        Where the runs are in MLflow (links only for an ``http(s)://`` tracking server).

    Returns
    -------
    str
        A headline with the parent run, then algorithm, seed, K, T, rounds run, per objective
        its test metric (pooled / mean over clients, the unit in the heading), the registered
        version (and whether it became ``champion``) and the run.
    """
    objectives: dict[str, str] = {}
    for run in runs:
        objectives.update(run["metrics"])
    head = ["algorithm", "seed", "K", "T", "rounds run"]
    head += [f"{s} {_METRIC_LABELS.get(m, m)}" for s, m in objectives.items()]
    head += ["registry", "MLflow run"]
    lines = [
        f"# FedCARE results: {dataset}",
        "",
        f"MLflow parent run: {_run_link(tracking_uri, experiment_id, parent_run_id, 'parent')} "
        f"(experiment {experiment_id}, `{tracking_uri}`). Test metrics: pooled over every "
        "client's test rows / mean over clients. Each client model's model card is in its "
        "run's artifacts (`model_cards/client<k>.html`) and its logged model's.",
        "",
        "| " + " | ".join(head) + " |",
        "| " + " | ".join("---" for _ in head) + " |",
    ]
    for run in runs:
        metrics = [
            f"{_number(run['pooled'].get(s))} / {_number(run['mean_over_clients'].get(s))}"
            for s in objectives
        ]
        link = _run_link(tracking_uri, experiment_id, run["mlflow_run_id"], "run")
        row = [_cell(str(run["algorithm"])), str(run["seed"]), str(run["clients"])]
        row += [str(run["rounds"]), str(run["rounds_run"]), *metrics, _registry_cell(run), link]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines + _clinical_markdown(runs)) + "\n"


def _clinical_markdown(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The runs' clinical metrics (:mod:`fedcare_core.evaluation.clinical_rows`) as Markdown."""
    head = ("algorithm", "seed", *CLINICAL_HEAD)
    rows = [
        (_cell(str(run["algorithm"])), str(run["seed"]), *(_cell(c) for c in row))
        for run in runs
        for row in clinical_rows(run.get("objectives", {}))
    ]
    los = [
        f"- {_cell(str(run['algorithm']))}, seed {run['seed']}: {_cell(line)}"
        for run in runs
        for line in length_of_stay_lines(run.get("objectives", {}))
    ]
    if not rows and not los:
        return []
    lines = [
        "",
        "## Clinical metrics",
        "",
        "Pooled over every client's test rows; sensitivity, specificity, PPV and NPV at each "
        "client's own threshold (the target sensitivity on its validation rows). The Brier "
        "score's reference (in brackets) predicts the observed rate for everyone.",
    ]
    if rows:
        lines += ["", "| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |"]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
    if los:
        lines += ["", "Length of stay (bias: mean predicted minus actual days):", "", *los]
    return lines


@task(name="results-artifact", cache_policy=NO_CACHE, persist_result=False)
def results_artifact_task(
    key: str,
    dataset: str,
    runs: Sequence[Mapping[str, Any]],
    tracking_uri: str,
    experiment_id: str,
    parent_run_id: str,
) -> None:
    """Keep a flow run's results table as a Prefect Markdown artifact (:func:`results_markdown`).

    Parameters
    ----------
    key
        Artifact key (lower-case letters, digits and dashes), e.g. ``fedcare-results``.
    dataset, runs, tracking_uri, experiment_id, parent_run_id
        See :func:`results_markdown`.
    """
    keep_markdown_artifact(
        key,
        results_markdown(dataset, runs, tracking_uri, experiment_id, parent_run_id),
        f"FedCARE results on {dataset}: {len(runs)} algorithm × seed run(s)",
    )
