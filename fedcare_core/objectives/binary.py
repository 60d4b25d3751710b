"""Binary objectives: an event's risk, weighted binary cross-entropy, AUROC (SPEC §2)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from fedcare_core.config.preferences import Preference
from fedcare_core.objectives.kind import ObjectiveKind
from fedcare_core.objectives.metrics import MetricValue, auroc

if TYPE_CHECKING:
    import torch

    from fedcare_core.objectives.losses import ObjectiveLoss


class Binary(ObjectiveKind):
    """A 0/1 label; the head's logit through a sigmoid is the event's probability."""

    name = "binary"
    metric = "auroc"
    higher_is_better = True
    risk = True
    unit = None
    prediction = "probability"
    summary = "weighted BCE, AUROC"
    label_mean = "positive_rate"

    def make_loss(self, train_labels: np.ndarray, preference: Preference | None) -> ObjectiveLoss:
        """Weighted BCE, positive weight negatives / positives; a preference reshapes it.

        A sensitivity preference multiplies the weight by β; a fairness preference adds γ
        times its subgroup gap (:class:`~fedcare_core.objectives.losses.WeightedBCE`).
        """
        from fedcare_core.objectives.losses import WeightedBCE, positive_weight

        weight = positive_weight(train_labels)
        if preference is None or preference.kind == "plain":
            return WeightedBCE(self.name, pos_weight=weight)
        if preference.kind == "sensitivity":
            return WeightedBCE(self.name, pos_weight=weight * preference.weight)
        return WeightedBCE(self.name, pos_weight=weight, fairness=preference)

    def predict(self, score: torch.Tensor) -> torch.Tensor:
        """The probability: ``sigmoid(score)``."""
        import torch

        return torch.sigmoid(score)

    def score(self, y_true: np.ndarray, y_pred: np.ndarray) -> MetricValue:
        """AUROC."""
        return auroc(y_true, y_pred)

    def prediction_column(self, objective: str) -> str:
        """``<objective>_probability``."""
        return f"{objective}_probability"

    def unlearnable(self, train_labels: np.ndarray) -> str | None:
        """No positive, or no negative, label among the rows."""
        positives = int((train_labels > 0.5).sum())
        if positives == 0 or positives == len(train_labels):
            return f"has no {'positive' if positives == 0 else 'negative'} label"
        return None


#: The entry (``pyproject.toml``).
BINARY = Binary()
