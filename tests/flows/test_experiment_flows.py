"""The experiment flows against a temporary Prefect server: tables, figures, MLflow, failures."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import fedcare.tracking
from fedcare.cli.main import main as fedcare
from fedcare.experiments.cells import experiment_cells
from fedcare.experiments.engine import plan_jobs
from fedcare.grid import LOOPBACK
from fedcare_core.errors import ConfigError
from flows.experiment_flows import ablation_flow, comparison_flow, disparity_flow, grid_task_runner
from tests.fedcare.sites.hospital_sites import write_hospital_sites
from tests.tasks.test_data import write_clean_table

TINY = {"seeds": 2, "rounds": 2, "max_patients": 900, "stage2_epochs": 2, "workers": 2}


def _runs(uri: str) -> list:
    from mlflow.tracking import MlflowClient

    mc = MlflowClient(tracking_uri=uri)
    ids = [e.experiment_id for e in mc.search_experiments()]
    return list(mc.search_runs(ids)) if ids else []


@pytest.mark.realdata
def test_disparity_flow_writes_tables_figures_and_one_mlflow_parent_run(
    prefect_harness: None, data_dir: Path, tmp_path: Path
) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    result = disparity_flow(
        data_dir=str(data_dir),
        clients=3,
        ratios=[0.2, 0.4],
        out_dir=str(tmp_path / "out"),
        tracking_uri=uri,
        **TINY,
    )
    assert result["runs"] == 2 * 2 * 2 and result["ran"] == 8
    names = {Path(f).name for f in result["files"]}
    assert names >= {
        "disparity.md",
        "disparity_runs.csv",
        "disparity_summary.csv",
        "fig6_avg_auroc_by_rho.png",
        "fig7_los_mae_by_rho.png",
    }
    report = (tmp_path / "out" / "disparity" / "disparity.md").read_text()
    assert "| 0.2 |" in report and "| 0.4 |" in report and "fedcare-b" in report

    runs = _runs(uri)
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    assert parents[0].data.params["experiment"] == "disparity"
    assert len(children) == 4  # (FedCARE, FedCARE-B) × two ρ
    for child in children:
        assert child.data.params["seeds"] == "2"
        assert 0.0 <= child.data.metrics["test_over_seeds/avg_auroc.mean"] <= 1.0
        assert "test_over_seeds/los.mae_days.pooled.mean" in child.data.metrics
    summaries = [k for k in parents[0].data.metrics if k.startswith("test_over_seeds/")]
    assert len({k.split("/")[1] for k in summaries}) == 4  # one group per table row
    from mlflow.tracking import MlflowClient

    mc = MlflowClient(uri)
    figures = {a.path for a in mc.list_artifacts(parents[0].info.run_id, "figures")}
    assert "figures/fig6_avg_auroc_by_rho.png" in figures
    text = json.dumps([r.data.params for r in runs] + [r.data.tags for r in runs])
    assert "patient_nbr" not in text and "encounter_id" not in text


def test_a_corrupted_table_stops_the_comparison_before_any_run(
    prefect_harness: None, tmp_path: Path
) -> None:
    df = write_clean_table(tmp_path / "data")
    df.loc[[3], "readmitted"] = "SOMETIMES"
    df.to_csv(tmp_path / "data" / "diabetic_data.csv", index=False)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    state = comparison_flow(
        data_dir=str(tmp_path / "data"),
        out_dir=str(tmp_path / "out"),
        tracking_uri=uri,
        return_state=True,
        **TINY,
    )
    assert state.is_failed()
    with pytest.raises(Exception, match="readmitted"):
        state.result()
    assert not (tmp_path / "out" / "cells").exists()
    assert not (tmp_path / "out" / "comparison").exists()
    assert _runs(uri) == []


def _grid_task_runs(parent_flow_run_id: object) -> list:
    """The task runs of the ``fedcare-grid`` subflow of one experiment flow run."""
    from prefect import get_client
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterId,
        FlowRunFilterParentTaskRunId,
    )

    def of(flow_run_ids: list) -> FlowRunFilter:
        return FlowRunFilter(id=FlowRunFilterId(any_=flow_run_ids))

    with get_client(sync_client=True) as client:
        wrappers = client.read_task_runs(flow_run_filter=of([parent_flow_run_id]))
        parent_ids = FlowRunFilterParentTaskRunId(any_=[t.id for t in wrappers])
        (grid,) = client.read_flow_runs(
            flow_run_filter=FlowRunFilter(parent_task_run_id=parent_ids)
        )
        assert grid.name and client.read_flow(grid.flow_id).name == "fedcare-grid"
        return list(client.read_task_runs(flow_run_filter=of([grid.id])))


def _runs_table(path: Path) -> pd.DataFrame:
    return pd.read_csv(path).drop(columns=["seconds"])


@pytest.mark.realdata
def test_the_comparison_flow_runs_one_dask_task_per_job_and_matches_the_cli(
    prefect_harness: None, data_dir: Path, tmp_path: Path
) -> None:
    methods = ["fedavg", "fedcare-b", "fedcare"]
    grid = {"seeds": 2, "rounds": 2, "max_patients": 900, "stage2_epochs": 2, "clients": 3}
    cli_args = [f"--{k.replace('_', '-')}={v}" for k, v in grid.items()]
    assert (
        fedcare(
            [
                "experiment",
                "comparison",
                "--data-dir",
                str(data_dir),
                "--workers",
                "2",
                "--algorithms",
                ",".join(methods),
                "--out",
                str(tmp_path / "cli"),
                "--quiet",
                *cli_args,
            ]
        )
        == 0
    )
    state = comparison_flow(
        data_dir=str(data_dir),
        algorithms=methods,
        workers=2,
        out_dir=str(tmp_path / "flow"),
        tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}",
        return_state=True,
        **grid,
    )
    result = state.result()
    assert result["runs"] == 6 and result["ran"] == 6
    table = "comparison/comparison_runs.csv"
    flow_runs, cli_runs = (
        _runs_table(tmp_path / "flow" / table),
        _runs_table(tmp_path / "cli" / table),
    )
    assert len(flow_runs) == 6
    pd.testing.assert_frame_equal(flow_runs, cli_runs)

    jobs = plan_jobs(experiment_cells("comparison", 2, clients=3, algorithms=methods))
    task_runs = _grid_task_runs(state.state_details.flow_run_id)
    assert sorted(t.name for t in task_runs) == sorted(
        "+".join(c.key for c in job.cells) for job in jobs
    )
    assert all(t.state is not None and t.state.is_completed() for t in task_runs)


def test_the_grid_task_runner_is_a_loopback_cluster_or_the_named_one() -> None:
    local = grid_task_runner(None, 3)
    assert local.cluster_kwargs["n_workers"] == 3  # type: ignore[attr-defined]
    assert local.cluster_kwargs["host"] == LOOPBACK  # type: ignore[attr-defined]
    assert local.cluster_kwargs["threads_per_worker"] == 1  # type: ignore[attr-defined]
    remote = grid_task_runner("tcp://10.0.0.5:8786", None)
    assert remote.address == "tcp://10.0.0.5:8786"  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="has its own"):
        grid_task_runner("tcp://10.0.0.5:8786", 2)
    with pytest.raises(ConfigError, match="dask_address must be"):
        grid_task_runner("not-an-address", None)


@pytest.fixture(scope="module")
def hospital_sites(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str | int]:
    """The flows' parameters of a grid over three hospitals (one seed, one round)."""
    folder = tmp_path_factory.mktemp("hospital-sites")
    sites, schema = write_hospital_sites(folder, init=["--rounds", "1", "--stage2-epochs", "2"])
    return {"sites": str(sites), "federation_schema": str(schema), "seeds": 1}


def test_an_experiment_flow_over_sites_refuses_what_they_decide(
    prefect_harness: None, hospital_sites: dict[str, str | int], tmp_path: Path
) -> None:
    state = ablation_flow(
        **hospital_sites, dataset="mimic3", out_dir=str(tmp_path / "out"), return_state=True
    )
    assert state.is_failed()
    with pytest.raises(Exception, match=r"^dataset: decided by the sites and their schema"):
        state.result()
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_the_ablation_flow_runs_over_sites(
    prefect_harness: None, hospital_sites: dict[str, str | int], tmp_path: Path
) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    result = ablation_flow(
        **hospital_sites, variants=["paper"], workers=1, out_dir=str(tmp_path / "out"),
        tracking_uri=uri,
    )  # fmt: skip
    assert result["runs"] == 2 and result["ran"] == 2
    report = (tmp_path / "out" / "ablation" / "ablation.md").read_text()
    assert report.startswith("# ablation — riverside") and "fedcare-b" in report
    (parent,) = [r for r in _runs(uri) if "mlflow.parentRunId" not in r.data.tags]
    assert parent.data.params["sites"] == hospital_sites["sites"]
