"""Operating points, per-client clinical metrics and their spread (issue 31)."""

import numpy as np
import pytest

from fedcare_core.config import DataConfig, ExperimentConfig, Stage1Config, Stage2Config
from fedcare_core.evaluation.clients import (
    _client_predictions,
    evaluate_with_validation,
    operating_points,
)
from fedcare_core.evaluation.clinical import confusion_at
from fedcare_core.evaluation.pooled import EvaluationSettings
from fedcare_core.predict.predictors import predictor_scorer
from fedcare_core.run.pipeline import run_experiment
from tests.fedcare_core.synthetic import PARTITION, make_cohort


@pytest.fixture(scope="module")
def result():
    config = ExperimentConfig(
        algorithm="fedavg",
        data=DataConfig(clients=3),
        stage1=Stage1Config(rounds=5, batch_size=32),
        stage2=Stage2Config(epochs=2, batch_size=32),
    )
    return run_experiment(make_cohort(900), PARTITION, config)


def _binary(result):
    return [o.name for o in result.federation.objectives if o.kind == "binary"]


def test_each_threshold_reaches_the_target_on_its_clients_validation_rows(result):
    fed = result.federation
    scorers = [predictor_scorer(p) for p in result.predictors]
    val = _client_predictions(fed, scorers, "val")
    for target in (0.5, 0.8, 0.95):
        points = operating_points(fed, val, target)
        assert {name for name, _ in points} == set(_binary(result))
        for name in _binary(result):
            for rows in val[name]:
                y, p = rows.y, rows.p
                threshold = points[(name, rows.client_id)]
                if not (y > 0.5).any():
                    assert threshold is None
                    continue
                assert confusion_at(y, p, threshold).sensitivity >= target
                # the highest such threshold: any higher one falls short of the target
                above = p[p > threshold]
                if len(above):
                    assert confusion_at(y, p, above.min()).sensitivity < target


def test_pooled_rates_sum_the_clients_counts_at_their_own_thresholds(result):
    fed = result.federation
    scorers = [predictor_scorer(p) for p in result.predictors]
    report = evaluate_with_validation(fed, scorers, EvaluationSettings(0.8))
    test = _client_predictions(fed, scorers, "test")
    for name in _binary(result):
        rep = report.get(name)
        tp = fn = tn = fp = 0
        for rows, client in zip(test[name], rep.clients, strict=True):
            assert client.client_id == rows.client_id
            c = confusion_at(rows.y, rows.p, client.clinical["threshold"])
            assert client.clinical["sensitivity"] == c.sensitivity
            tp, fn, tn, fp = tp + c.tp, fn + c.fn, tn + c.tn, fp + c.fp
        assert rep.clinical["sensitivity"] == pytest.approx(tp / (tp + fn))
        assert rep.clinical["specificity"] == pytest.approx(tn / (tn + fp))
        briers = [c.clinical["brier"] for c in rep.clients]
        assert rep.clinical_spread["brier"]["mean"] == pytest.approx(np.mean(briers))
        assert rep.clinical_spread["brier"]["max"] == max(briers)
        assert rep.clinical_spread["brier"]["n"] == len(briers)


def test_a_higher_target_trades_specificity_for_sensitivity(result):
    fed = result.federation
    scorers = [predictor_scorer(p) for p in result.predictors]
    low, high = (
        evaluate_with_validation(fed, scorers, EvaluationSettings(t, bootstrap=0))
        for t in (0.5, 0.95)
    )
    for name in _binary(result):
        a, b = low.get(name).clinical, high.get(name).clinical
        assert b["sensitivity"] >= a["sensitivity"] and b["specificity"] <= a["specificity"]
        assert (b["sensitivity"], b["specificity"]) != (a["sensitivity"], a["specificity"])


def test_the_target_is_a_checked_setting():
    from fedcare_core.errors import ConfigError

    assert ExperimentConfig().target_sensitivity == 0.8
    for bad in (0.0, 1.5, -0.1):
        with pytest.raises(ConfigError, match="target_sensitivity"):
            ExperimentConfig.from_dict({"target_sensitivity": bad})
    with pytest.raises(ConfigError, match="calibration"):
        ExperimentConfig.from_dict({"calibration": "beta"})
