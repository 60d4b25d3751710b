"""Regression objectives: a non-negative quantity in days, Huber on ``log1p``, MAE (SPEC §2)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from fedcare_core.config.preferences import Preference
from fedcare_core.objectives.kind import ObjectiveKind
from fedcare_core.objectives.metrics import MetricValue, mae

if TYPE_CHECKING:
    import torch

    from fedcare_core.objectives.losses import ObjectiveLoss


class Regression(ObjectiveKind):
    """A non-negative length in days; the head predicts ``log1p(days)`` through a softplus."""

    name = "regression"
    metric = "mae_days"
    higher_is_better = False
    risk = False
    unit = "days"
    prediction = "predicted value, in days"
    summary = "Huber on log1p, MAE in days"
    label_mean = "mean"

    def make_loss(self, train_labels: np.ndarray, preference: Preference | None) -> ObjectiveLoss:
        """Huber loss on ``log1p(days)`` (a preference shapes a risk's loss, not this one)."""
        from fedcare_core.objectives.losses import LogHuber

        return LogHuber(self.name)

    def predict(self, score: torch.Tensor) -> torch.Tensor:
        """Days: ``expm1(softplus(score))``."""
        import torch
        import torch.nn.functional as F

        return torch.expm1(F.softplus(score))

    def score(self, y_true: np.ndarray, y_pred: np.ndarray) -> MetricValue:
        """Mean absolute error, in days."""
        return mae(y_true, y_pred)

    def prediction_column(self, objective: str) -> str:
        """``<objective>_days``."""
        return f"{objective}_days"

    def unlearnable(self, train_labels: np.ndarray) -> str | None:
        """None: any labelled row trains it."""
        return None


#: The entry (``pyproject.toml``).
REGRESSION = Regression()
