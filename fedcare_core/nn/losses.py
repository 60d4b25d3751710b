"""Losses and output activations (SPEC §2).

Binary objectives: weighted binary cross-entropy, positive weight = negatives / positives in the
client's training labels. Length of stay: Huber loss on ``log1p(days)``, the prediction being
``softplus(score)`` in log space.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

#: Huber transition point, in log1p-days.
_HUBER_DELTA = 1.0


@dataclass(frozen=True)
class ObjectiveLoss:
    """Loss of one objective at one client."""

    kind: str
    pos_weight: float = 1.0

    def __call__(self, score: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Mean loss of raw scores against targets (binary 0/1, or LOS in days)."""
        if self.kind == "binary":
            pw = torch.tensor(self.pos_weight, dtype=score.dtype)
            return F.binary_cross_entropy_with_logits(score, target, pos_weight=pw)
        return F.huber_loss(F.softplus(score), torch.log1p(target), delta=_HUBER_DELTA)


def make_loss(kind: str, train_labels: np.ndarray) -> ObjectiveLoss:
    """Build the loss for an objective from the client's training labels (NaN ignored)."""
    if kind != "binary":
        return ObjectiveLoss(kind="regression")
    y = train_labels[np.isfinite(train_labels)]
    pos = float((y > 0.5).sum())
    neg = float(len(y) - pos)
    return ObjectiveLoss(kind="binary", pos_weight=neg / pos if pos > 0 else 1.0)


def predict(kind: str, score: torch.Tensor) -> torch.Tensor:
    """Convert raw scores to predictions: probabilities, or LOS in days."""
    if kind == "binary":
        return torch.sigmoid(score)
    return torch.expm1(F.softplus(score))
