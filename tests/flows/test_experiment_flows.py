"""The experiment flows against a temporary Prefect server: tables, figures, MLflow, failures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import fedcare_tracking  # noqa: F401  (MLflow environment defaults before mlflow loads)
from flows.experiment_flows import comparison_flow, disparity_flow
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
    report = (tmp_path / "out" / "diabetes130" / "disparity" / "disparity.md").read_text()
    assert "| 0.2 |" in report and "| 0.4 |" in report and "fedcare-b" in report

    runs = _runs(uri)
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    assert parents[0].data.params["experiment"] == "disparity"
    assert len(children) == 4  # (FedCARE, FedCARE-B) × two ρ
    for child in children:
        assert child.data.params["seeds"] == "2"
        assert 0.0 <= child.data.metrics["avg_auroc.mean"] <= 1.0
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
    assert not (tmp_path / "out" / "diabetes130" / "cells").exists()
    assert not (tmp_path / "out" / "diabetes130" / "comparison").exists()
    assert _runs(uri) == []
