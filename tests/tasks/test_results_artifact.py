"""The results artifact's Markdown: one row per algorithm × seed, units, registry, MLflow links."""

from __future__ import annotations

from typing import Any

from tasks.artifacts import results_markdown

METRICS = {"early_discharge": "auroc", "readmission": "auroc", "los": "mae_days"}


def _run(algorithm: str, run_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "algorithm": algorithm,
        "seed": 0,
        "clients": 3,
        "rounds": 4,
        "rounds_run": 4,
        "mlflow_run_id": run_id,
        "metrics": METRICS,
        "pooled": {"early_discharge": 0.71234, "readmission": 0.6, "los": 2.5},
        "mean_over_clients": {"early_discharge": 0.7, "readmission": None, "los": 2.25},
        **extra,
    }


def test_table_has_units_registry_and_links_to_each_run() -> None:
    registry = {"model": "fedcare-d-fedcare-backbone", "version": "2", "promoted": True}
    runs = [_run("fedcare", "r1", registry=registry), _run("fedavg", "r2")]
    md = results_markdown("diabetes130", runs, "http://127.0.0.1:5000", "4", "p0")
    lines = md.splitlines()
    assert lines[0] == "# FedCARE results: diabetes130"
    mode = "?workflowType=machine_learning"  # the UI's model-training mode
    assert f"[parent](http://127.0.0.1:5000/#/experiments/4/runs/p0{mode})" in md
    head = lines[lines.index(next(x for x in lines if x.startswith("| algorithm")))]
    assert head == (
        "| algorithm | seed | K | T | rounds run | early_discharge AUROC | readmission AUROC "
        "| los MAE (days) | registry | MLflow run |"
    )
    rows = [x for x in lines if x.startswith("| fed")]
    assert rows == [
        "| fedcare | 0 | 3 | 4 | 4 | 0.7123 / 0.7000 | 0.6000 / — | 2.5000 / 2.2500 "
        "| `fedcare-d-fedcare-backbone` v2 (champion) "
        f"| [run](http://127.0.0.1:5000/#/experiments/4/runs/r1{mode}) |",
        "| fedavg | 0 | 3 | 4 | 4 | 0.7123 / 0.7000 | 0.6000 / — | 2.5000 / 2.2500 | — "
        f"| [run](http://127.0.0.1:5000/#/experiments/4/runs/r2{mode}) |",
    ]


def test_a_local_store_shows_run_ids() -> None:
    md = results_markdown("diabetes130", [_run("fedavg", "r2")], "sqlite:///m.db", "1", "p0")
    assert "`r2` |" in md and "parent run: `p0`" in md and "http" not in md


CLINICAL = {
    "auprc": 0.185,
    "brier": 0.1006,
    "brier_reference": 0.1032,
    "calibration_slope": 1.005,
    "ece": 0.007,
    "mean_risk": 0.117,
    "observed_rate": 0.1169,
    "sensitivity": 0.8012,
    "specificity": 0.35,
    "ppv": 0.14,
    "npv": None,
}


def test_clinical_metrics_follow_the_table() -> None:
    objectives = {
        "readmission": {
            "metric": "auroc",
            "pooled": 0.6212,
            "clinical": CLINICAL,
            "intervals": {"auroc": {"low": 0.601, "high": 0.64}},
        },
        "los": {
            "metric": "mae_days",
            "pooled": 2.19,
            "clinical": {"bias_days": -0.87, "mae_days_0-3": 1.84},
        },
    }
    md = results_markdown(
        "diabetes130", [_run("fedavg", "r2", objectives=objectives)], "x", "1", "p"
    )
    lines = md.splitlines()
    assert "## Clinical metrics" in lines
    assert (
        "| fedavg | 0 | readmission | 0.621 [0.601, 0.640] | 0.185 | 0.101 (0.103) | 1.00 | 0.007 "
        "| 0.117 / 0.117 | 0.801 | 0.350 | 0.140 | n/a |" in lines
    )
    assert "- fedavg, seed 0: los: MAE 2.19 d; bias -0.87 d; MAE by length 0-3 d 1.84" in lines


def test_runs_without_clinical_metrics_add_no_section() -> None:
    assert "Clinical" not in results_markdown("d", [_run("fedavg", "r2")], "x", "1", "p")
