"""Objective kinds: FedCARE's two by their entry points, and an outside kind installed alone."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from fedcare_core.algorithms import get_algorithm
from fedcare_core.config import DataConfig, ExperimentConfig, Stage1Config, Stage2Config
from fedcare_core.config.preferences import Preference
from fedcare_core.errors import ConfigError
from fedcare_core.objectives import (
    ObjectiveKind,
    make_loss,
    objective_kind,
    objective_kind_names,
    predict,
)
from fedcare_core.objectives.losses import ObjectiveLoss
from fedcare_core.objectives.metrics import MetricValue, auroc
from fedcare_core.plugins import PluginError
from fedcare_core.predict.package import output_column
from fedcare_core.run.pipeline import run_experiment
from tests.fedcare_core.synthetic import PARTITION, make_cohort
from tests.installed_plugins import installed

Y = np.array([1.0, 0.0, 0.0, np.nan, 0.0, 1.0, 0.0])
SCORE = torch.tensor([0.3, -1.2, 0.4, 2.0, -0.1, 1.5, -0.7], dtype=torch.float64)


def test_fedcares_own_kinds_are_found_by_their_entry_points():
    assert objective_kind_names()[:2] == ("binary", "regression")
    binary, regression = objective_kind("binary"), objective_kind("regression")
    assert (binary.metric, binary.risk, binary.interval) == ("auroc", True, False)
    assert (regression.metric, regression.risk, regression.interval) == ("mae_days", False, True)
    assert output_column("readmission", "binary") == "readmission_probability"
    assert output_column("los", "regression") == "los_days"
    with pytest.raises(PluginError, match="unknown objective_kind 'survival'"):
        objective_kind("survival")


def test_a_binary_loss_is_the_weighted_bce_its_labels_and_preference_give():
    labelled = Y[np.isfinite(Y)]
    weight = float((labelled < 0.5).sum() / (labelled > 0.5).sum())
    target = torch.tensor(np.nan_to_num(Y), dtype=torch.float64)
    expected = F.binary_cross_entropy_with_logits(
        SCORE, target, pos_weight=torch.tensor(weight, dtype=torch.float64)
    )
    assert make_loss("binary", Y).pos_weight == pytest.approx(weight)
    assert torch.equal(make_loss("binary", Y)(SCORE, target), expected)
    sensitive = make_loss("binary", Y, Preference("sensitivity", 3.0))
    assert sensitive.pos_weight == pytest.approx(3 * weight)
    assert torch.equal(predict("binary", SCORE), torch.sigmoid(SCORE))
    assert objective_kind("binary").unlearnable(np.zeros(5)) == "has no positive label"
    assert objective_kind("binary").unlearnable(np.ones(5)) == "has no negative label"
    assert objective_kind("binary").unlearnable(labelled) is None


def test_a_regression_predicts_days_through_log1p():
    days = torch.tensor([0.5, 3.0, 12.0], dtype=torch.float64)
    score = torch.tensor([0.1, 1.2, 2.6], dtype=torch.float64)
    loss = make_loss("regression", days.numpy(), Preference("sensitivity", 3.0))
    expected = F.huber_loss(F.softplus(score), torch.log1p(days), delta=1.0)
    assert torch.equal(loss(score, days), expected)
    assert torch.equal(predict("regression", score), torch.expm1(F.softplus(score)))
    assert objective_kind("regression").unlearnable(days.numpy()) is None


class PlainBCE(ObjectiveLoss):
    """Unweighted binary cross-entropy."""

    def __call__(self, score: Any, target: Any, groups: Any = None) -> Any:
        return F.binary_cross_entropy_with_logits(score, target)


class PlainRisk(ObjectiveKind):
    """An outside kind: an event's risk learned without a class weight."""

    name = "plain-risk"
    metric = "auroc"
    higher_is_better = True
    risk = True
    unit = None
    prediction = "risk, unweighted"
    summary = "plain BCE, AUROC"
    label_mean = "positive_rate"

    def make_loss(self, train_labels: np.ndarray, preference: Preference | None) -> ObjectiveLoss:
        return PlainBCE(self.name)

    def predict(self, score: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(score)

    def score(self, y_true: np.ndarray, y_pred: np.ndarray) -> MetricValue:
        return auroc(y_true, y_pred)

    def prediction_column(self, objective: str) -> str:
        return f"{objective}_risk"

    def unlearnable(self, train_labels: np.ndarray) -> str | None:
        return objective_kind("binary").unlearnable(train_labels)


PLAIN_RISK = PlainRisk()


@pytest.fixture
def plain_risk(tmp_path: Path) -> Iterator[None]:
    """The outside kind, installed by its entry point alone."""
    group = {"fedcare.objective_kinds": {"plain-risk": f"{__name__}:PLAIN_RISK"}}
    with installed(tmp_path / "site", "plain-risk-kind", group):
        yield
    assert "plain-risk" not in objective_kind_names()


def _config(algorithm: str) -> ExperimentConfig:
    return ExperimentConfig(
        algorithm=algorithm,
        data=DataConfig(clients=3),
        stage1=Stage1Config(rounds=2, batch_size=32),
        stage2=Stage2Config(epochs=1, batch_size=32),
        bootstrap=0,
    )


def test_an_installed_kind_trains_scores_and_exports_with_nothing_else_changed(plain_risk):
    cohort = make_cohort(600)
    kinds = {"readmission": "plain-risk"}
    cohort = replace(
        cohort,
        objectives=tuple(replace(o, kind=kinds.get(o.name, o.kind)) for o in cohort.objectives),
    )
    result = run_experiment(cohort, PARTITION, _config("fedcare"))
    report = result.evaluation.get("readmission")
    assert report.metric == "auroc" and report.pooled is not None
    predictor = next(p for p in result.predictors if "readmission" in p.objectives)
    assert predictor.kinds[predictor.objectives.index("readmission")] == "plain-risk"
    assert "readmission" in predictor.calibration  # a risk is recalibrated
    assert output_column("readmission", "plain-risk") == "readmission_risk"
    assert get_algorithm("fedcare").refuses_objective("readmission", "plain-risk") is None
    with pytest.raises(ConfigError, match="'readmission' is a plain-risk objective"):
        run_experiment(cohort, PARTITION, _config("fedxgb"))
