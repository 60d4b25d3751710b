"""A real ``fedcare`` flow run logging to a real MLflow server: what Prefect then shows.

* the ``fedcare-results`` Markdown artifact, read back from the Prefect API: one row per
  algorithm × seed with K, T, rounds run, the test metrics with their units, the registry
  version, and links to each MLflow run and the parent run that are routes of the served UI;
* the validation artifact's link opens the report (a UI route; the download returns the HTML);
* the Stage 2 task runs are named ``stage2-client0`` … ``stage2-client<K-1>``;
* one artifact per key and flow run, whatever created it again (a retried POST or task).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

import fedcare.tracking  # noqa: F401  (MLflow environment defaults before mlflow loads)
from flows.fedcare_flow import fedcare_pipeline
from tests.flows.test_task_run_names import _task_run_names
from tests.mlflow_server import mlflow_server, route_of, ui_bundle, ui_routes

K = 3
SMALL = {"clients": K, "rounds": 3, "max_patients": 3000, "stage2_epochs": 2}
LINK = re.compile(r"\]\((http://[^)\s]+)\)")


def _listed(flow_run_id: object) -> list[Any]:
    """The flow run's artifacts, as Prefect's API lists them."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        return list(
            client.read_artifacts(
                flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id]))
            )
        )


def _artifacts(flow_run_id: object) -> dict[str, str]:
    """Key → data of the flow run's artifacts; fails if a key is listed twice."""
    keys = [str(a.key) for a in _listed(flow_run_id) if a.key]
    assert len(keys) == len(set(keys)), keys  # one artifact per key and flow run
    return {str(a.key): str(a.data) for a in _listed(flow_run_id) if a.key}


def test_a_flow_run_keeps_one_artifact_per_key_whatever_creates_it_again(
    prefect_harness: None,
) -> None:
    """A retried POST (Prefect's client after a 503 or a timeout) or a retried task creates
    an identical artifact again: the flow run still lists one, with the latest text."""
    from prefect import flow, task
    from prefect.artifacts import create_markdown_artifact

    from tasks.artifacts import results_artifact_task

    run = {"algorithm": "fedavg", "seed": 0, "clients": 3, "rounds": 2, "rounds_run": 2,
           "mlflow_run_id": "r1", "metrics": {"los": "mae_days"}, "pooled": {"los": 2.5},
           "mean_over_clients": {"los": 2.4}}  # fmt: skip

    @task
    def posted_twice() -> None:  # what a retried POST leaves: two identical artifacts
        for _ in range(2):
            create_markdown_artifact(key="fedcare-results", markdown="# FedCARE results: x")

    @flow
    def flow_run() -> None:
        posted_twice()
        results_artifact_task("fedcare-results", "diabetes130", [run], "sqlite:///m.db", "1", "p")
        results_artifact_task("fedcare-results", "diabetes130", [run], "sqlite:///m.db", "1", "p")

    state = flow_run(return_state=True)
    assert state.is_completed(), state.message
    listed = [a for a in _listed(state.state_details.flow_run_id) if a.key == "fedcare-results"]
    assert len(listed) == 1 and listed[0].type == "markdown"
    assert "| fedavg | 0 | 3 | 2 | 2 | 2.5000 / 2.4000 |" in str(listed[0].data)


@pytest.mark.slow
@pytest.mark.realdata
def test_results_artifact_links_every_run_and_the_report(
    prefect_harness: None, data_dir: Path, tmp_path: Path
) -> None:
    import httpx
    from mlflow.tracking import MlflowClient

    with mlflow_server(tmp_path / "server") as url:
        state = fedcare_pipeline(
            data_dir=str(data_dir),
            algorithm=["fedcare", "fedavg"],
            **SMALL,
            tracking_uri=url,
            reports_dir=str(tmp_path / "reports"),
            cache_stage1=False,
            return_state=True,
        )
        assert state.is_completed(), state.message
        summary = state.result()
        flow_run_id = state.state_details.flow_run_id
        routes = ui_routes(ui_bundle(url))
        experiment_id = MlflowClient(url).get_run(summary["parent_run_id"]).info.experiment_id

        artifacts = _artifacts(flow_run_id)
        results = artifacts["fedcare-results"]
        table, _, clinical = results.partition("## Clinical metrics")
        rows = [line for line in table.splitlines() if line.startswith("| fed")]
        assert len(rows) == 2
        clinical_rows = [line for line in clinical.splitlines() if line.startswith("| fed")]
        assert len(clinical_rows) == 4  # two runs × two binary objectives
        assert all(line.count("|") == 14 for line in clinical_rows)
        fedcare_row, fedavg_row = rows
        assert fedcare_row.startswith(f"| fedcare | 0 | {K} | 3 | 3 | ")
        backbone = "fedcare-diabetes130-fedcare-early_discharge+los+readmission-backbone"
        assert f"`{backbone}` v1 (champion)" in fedcare_row
        # Every algorithm registers its clients' models; a baseline has no backbone.
        assert (
            f"{K} client models (v1; " in fedcare_row and f"{K} client models (v1; " in fedavg_row
        )
        assert "backbone" not in fedavg_row
        assert "early_discharge AUROC" in results and "los MAE (days)" in results
        doc = summary["runs"][0]
        pooled = doc["pooled"]["early_discharge"]
        assert f"{pooled:.4f} / {doc['mean_over_clients']['early_discharge']:.4f}" in fedcare_row

        links = LINK.findall(results)
        run_ids = [summary["parent_run_id"], *(r["mlflow_run_id"] for r in summary["runs"])]
        mode = "?workflowType=machine_learning"  # the UI's model-training mode
        assert links == [f"{url}/#/experiments/{experiment_id}/runs/{r}{mode}" for r in run_ids]
        for link in links:
            assert route_of(urlsplit(link).fragment.partition("?")[0], routes) == (
                "/experiments/:experimentId/runs/:runUuid"
            )

        opened, download = LINK.findall(artifacts["validation-raw"])
        path = "validation/raw/index.html"
        assert opened == (
            f"{url}/#/experiments/{experiment_id}/runs/{summary['parent_run_id']}/artifacts/{path}"
            f"{mode}"
        )
        assert route_of(urlsplit(opened).fragment.partition("?")[0], routes) == (
            "/experiments/:experimentId/runs/:runUuid/*"
        )
        reply = httpx.get(download, timeout=30)
        assert reply.status_code == 200 and reply.headers["content-type"].startswith("text/html")
        assert "Data checks" in reply.text or "<html" in reply.text.lower()

    names = _task_run_names(flow_run_id, "stage2-client", K)
    assert names == [f"stage2-client{k}" for k in range(K)]
