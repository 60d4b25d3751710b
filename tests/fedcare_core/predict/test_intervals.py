"""Every deployed length-of-stay prediction has an interval, wherever the prediction goes.

Fitted on each client's validation rows (split conformal), stored in the predictor's spec and
the package, scored as ``<objective>_days_low`` and ``_high``, and measured on the test rows.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest
import torch

from fedcare_core.config import DataConfig, ExperimentConfig, Stage1Config, Stage2Config
from fedcare_core.evaluation.conformal import ConformalInterval, fit_conformal_interval
from fedcare_core.predict.calibrate import INTERVAL_COVERAGE, fit_intervals
from fedcare_core.predict.package import (
    PACKAGE_FILE,
    interval_columns,
    load_package,
    save_package,
)
from fedcare_core.run.packaging import client_package
from fedcare_core.run.pipeline import run_experiment
from tests.fedcare_core.synthetic import PARTITION, make_cohort


@pytest.fixture(scope="module")
def cohort():
    return make_cohort(600)


@pytest.fixture(scope="module")
def result(cohort):
    config = ExperimentConfig(
        algorithm="fedavg",
        seed=3,
        data=DataConfig(clients=6),
        stage1=Stage1Config(rounds=3, batch_size=32),
        stage2=Stage2Config(epochs=2, batch_size=32),
    )
    return run_experiment(cohort, PARTITION, config)


def _los_clients(result):
    return [i for i, c in enumerate(result.federation.clients) if "los" in c.objectives]


def _val(client):
    return torch.from_numpy(client.val.x_common), torch.from_numpy(client.val.x_private)


def test_each_los_model_has_the_interval_of_its_validation_residuals(result):
    assert len(_los_clients(result)) >= 2
    for client, predictor in zip(result.federation.clients, result.predictors, strict=True):
        if "los" not in client.objectives:
            assert predictor.intervals == {}
            continue
        days = predictor.predict_objective(*_val(client), "los")
        y = client.val.y[:, client.objectives.index("los")]
        expected = fit_conformal_interval(y, days, INTERVAL_COVERAGE)
        assert predictor.intervals == {"los": expected}
        assert expected.available and expected.coverage == 0.9
        assert fit_intervals(client, predictor) == {"los": expected}  # deterministic


def test_the_results_document_reports_the_interval_and_its_test_coverage(result):
    doc = result.to_dict()
    los = doc["objectives"]["los"]
    assert los["clinical"]["interval_level"] == 0.9
    assert 0.0 <= los["clinical"]["interval_coverage"] <= 1.0
    assert los["clinical"]["interval_width_days"] > 0
    assert los["clinical_spread"]["interval_coverage"]["n"] == len(_los_clients(result))
    for entry in los["clients"]:
        assert {"interval_coverage", "interval_width_days"} <= set(entry["clinical"])
    fitted = [c for c in doc["clients"] if "intervals" in c]
    assert [c["client"] for c in fitted] == [
        result.federation.clients[i].client_id for i in _los_clients(result)
    ]
    for entry in fitted:
        summary = entry["intervals"]["los"]
        assert summary["coverage"] == 0.9 and summary["n_val"] == entry["n_val"]
        assert "split conformal" in summary["reason"]
    json.dumps(doc, allow_nan=False)  # every value finite or None


def test_the_test_coverage_is_what_the_intervals_give_on_the_test_rows(result):
    index = _los_clients(result)[0]
    client, predictor = result.federation.clients[index], result.predictors[index]
    test = client.test
    low, high = predictor.predict_interval(
        torch.from_numpy(test.x_common), torch.from_numpy(test.x_private), "los"
    )
    y = test.y[:, client.objectives.index("los")]
    keep = np.isfinite(y)
    inside = (low[keep] <= y[keep]) & (y[keep] <= high[keep])
    entry = next(
        c
        for c in result.evaluation.get("los").clients
        if c.client_id == client.client_id  # the report's own entry for this client
    )
    assert entry.clinical["interval_coverage"] == pytest.approx(inside.mean())


def test_the_package_scores_interval_columns_after_the_predictions(result, cohort, tmp_path):
    index = _los_clients(result)[0]
    package = client_package(result, index)
    low_col, high_col = interval_columns("los")
    assert package.output_columns == ["los_days", low_col, high_col]
    rows = cohort.features.iloc[:40]
    scored = package.score(rows)
    assert list(scored.columns) == package.output_columns
    days, low, high = (scored[c].to_numpy() for c in package.output_columns)
    assert np.isfinite(scored.to_numpy()).all()
    assert ((0 <= low) & (low <= days) & (days <= high)).all()
    expected = package.predictor.interval_bounds(days, "los")
    np.testing.assert_array_equal(low, expected[0])
    np.testing.assert_array_equal(high, expected[1])
    described = package.describe()
    assert described["outputs"] == package.output_columns
    assert described["intervals"]["los"]["coverage"] == 0.9
    assert described["predictor"]["intervals"]["los"]["quantile"] > 0
    back = load_package(save_package(package, tmp_path / "pkg"))
    assert back.predictor.intervals == package.predictor.intervals
    pd.testing.assert_frame_equal(back.score(rows), scored)
    empty = package.score(rows.iloc[:0])
    assert empty.empty and list(empty.columns) == package.output_columns


def test_a_package_without_intervals_still_loads_and_scores_nan_ends(result, cohort, tmp_path):
    """A package written before intervals: the same predictions, and NaN interval ends."""
    index = _los_clients(result)[0]
    package = client_package(result, index)
    folder = save_package(package, tmp_path / "old")
    doc = json.loads((folder / PACKAGE_FILE).read_text())
    del doc["predictor"]["intervals"], doc["intervals"]
    doc["outputs"] = ["los_days"]
    (folder / PACKAGE_FILE).write_text(json.dumps(doc))
    old = load_package(folder)
    assert old.predictor.intervals == {}
    rows = cohort.features.iloc[:25]
    scored, new = old.score(rows), package.score(rows)
    assert list(scored.columns) == package.output_columns
    pd.testing.assert_series_equal(scored["los_days"], new["los_days"])
    assert scored[list(interval_columns("los"))].isna().all().all()
    assert old.interval_summary()["los"]["coverage"] is None


def test_a_binary_only_package_has_no_interval_column(result, cohort):
    index = next(i for i, c in enumerate(result.federation.clients) if "los" not in c.objectives)
    package = client_package(result, index)
    assert package.output_columns == [f"{package.objectives[0]}_probability"]
    assert list(package.score(cohort.features.iloc[:5]).columns) == package.output_columns
    assert package.describe()["intervals"] == {}


def test_too_few_validation_rows_give_nan_ends_and_say_why(result, cohort):
    index = _los_clients(result)[0]
    package = client_package(result, index)
    none = ConformalInterval(0.9, None, 5, "5 validation rows: too few")
    small = dataclasses.replace(package, predictor=package.predictor.with_intervals({"los": none}))
    scored = small.score(cohort.features.iloc[:10])
    assert np.isfinite(scored["los_days"]).all()
    assert scored[list(interval_columns("los"))].isna().all().all()
    assert small.interval_summary()["los"]["reason"] == "5 validation rows: too few"


def test_an_interval_is_only_for_a_regression_objective(result):
    index = next(i for i, c in enumerate(result.federation.clients) if "los" not in c.objectives)
    predictor = result.predictors[index]
    with pytest.raises(ValueError, match="no regression objective"):
        predictor.with_intervals({predictor.objectives[0]: ConformalInterval(0.9, 0.2, 30)})
