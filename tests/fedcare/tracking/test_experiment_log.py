"""An experiment's parent run and its row runs carry unit-bearing mean/std metrics."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import pytest

from fedcare.tracking import store
from fedcare.tracking.experiment_log import ExperimentOutputs, log_experiment_run, row_metrics

pytestmark = [
    pytest.mark.filterwarnings("ignore:No complete tensor found:UserWarning"),
    pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy:DeprecationWarning"),
]

UNITS = {"readmission": "auroc", "los": "mae_days"}


def _summary() -> pd.DataFrame:
    rows = [
        {
            "variant": "paper",
            "algorithm": algorithm,
            "clients": 10,
            "rho": math.nan,
            "readmission.mean": 0.7 + i / 100,
            "readmission.std": 0.01,
            "readmission.client_mean.mean": 0.68,
            "readmission.client_mean.std": math.nan,
            "los.mean": 2.5,
            "los.std": 0.1,
            "avg_auroc.mean": 0.7,
            "avg_auroc.std": 0.02,
            "rounds_run.mean": 100.0,
            "seconds.mean": 12.0,
            "n": 3,
        }
        for i, algorithm in enumerate(("fedcare", "fedavg"))
    ]
    return pd.DataFrame(rows)


def test_row_metrics_name_the_objective_metric_and_field():
    row: dict[str, Any] = _summary().iloc[0].to_dict()
    on_row = row_metrics(row, UNITS)
    assert on_row["test_over_seeds/readmission.auroc.pooled.mean"] == pytest.approx(0.7)
    assert on_row["test_over_seeds/readmission.auroc.mean_over_clients.mean"] == 0.68
    assert "test_over_seeds/readmission.auroc.mean_over_clients.std" not in on_row  # NaN
    assert on_row["test_over_seeds/los.mae_days.pooled.std"] == 0.1
    assert on_row["test_over_seeds/avg_auroc.mean"] == 0.7
    assert on_row["rounds_run.mean"] == 100.0
    on_parent = row_metrics(row, UNITS, "fedcare-K10")
    assert on_parent["test_over_seeds/fedcare-K10/los.mae_days.pooled.mean"] == 2.5
    assert not [k for k in on_parent if "rounds_run" in k or "seconds" in k]


def test_the_parent_run_holds_every_rows_summary(logged):
    runs = pd.DataFrame()
    runs.attrs["metrics"] = UNITS
    outputs = ExperimentOutputs("comparison", [], runs, _summary())
    parent = log_experiment_run(outputs, dataset="synthetic", params={"seeds": "0,1,2"})
    mc = store.client()
    metrics = mc.get_run(parent).data.metrics
    assert metrics["test_over_seeds/fedcare-K10/readmission.auroc.pooled.mean"] == 0.7
    assert metrics["test_over_seeds/fedavg-K10/readmission.auroc.pooled.mean"] == 0.71
    rows = mc.search_runs(
        [mc.get_run(parent).info.experiment_id],
        filter_string=f"tags.`mlflow.parentRunId` = '{parent}'",
    )
    assert sorted(r.info.run_name for r in rows) == ["fedavg K10", "fedcare K10"]
    for r in rows:
        assert "test_over_seeds/los.mae_days.pooled.mean" in r.data.metrics
