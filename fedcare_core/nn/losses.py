"""Losses and output activations (SPEC §2).

Binary objectives: weighted binary cross-entropy, positive weight = negatives / positives in the
client's training labels. Length of stay: Huber loss on ``log1p(days)``, the prediction being
``softplus(score)`` in log space. A site's clinical preference for an objective
(:mod:`fedcare_core.config.preferences`) changes that objective's loss at the site: a sensitivity
preference multiplies the positive weight by β, a fairness preference adds γ times the
subgroup gap of its metric (which needs each row's subgroup code, ``groups``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from fedcare_core.config.preferences import MIN_GROUP_ROWS, Preference

#: Huber transition point, in log1p-days.
_HUBER_DELTA = 1.0
#: Added to a subgroup's score spread before dividing by it (a subgroup of equal scores).
_SCALE_FLOOR = 1e-3


@dataclass(frozen=True)
class ObjectiveLoss:
    """Loss of one objective at one client."""

    kind: str
    pos_weight: float = 1.0
    #: A fairness preference (None: none): its attribute's codes come as ``groups``.
    fairness: Preference | None = None

    @property
    def attribute(self) -> str | None:
        """The sensitive attribute whose subgroup codes the loss needs (None: none)."""
        return None if self.fairness is None else self.fairness.attribute

    def __call__(
        self, score: torch.Tensor, target: torch.Tensor, groups: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Mean loss of raw scores against targets (binary 0/1, or LOS in days).

        ``groups``: the rows' subgroup codes of :attr:`attribute`, needed by a fairness
        preference (a ``ValueError`` without them).
        """
        if self.kind != "binary":
            return F.huber_loss(F.softplus(score), torch.log1p(target), delta=_HUBER_DELTA)
        pw = torch.tensor(self.pos_weight, dtype=score.dtype)
        loss = F.binary_cross_entropy_with_logits(score, target, pos_weight=pw)
        if self.fairness is None:
            return loss
        if groups is None:
            raise ValueError(f"a fair({self.fairness.attribute}) loss needs the rows' subgroups")
        gap = subgroup_gap(score, target, groups, self.fairness.metric)
        return loss + self.fairness.weight * gap


def make_loss(
    kind: str, train_labels: np.ndarray, preference: Preference | None = None
) -> ObjectiveLoss:
    """Build the loss for an objective from the client's training labels (NaN ignored).

    Parameters
    ----------
    kind
        ``"binary"`` or ``"regression"``.
    train_labels
        The client's training labels of the objective (their prevalence sets the weight).
    preference
        The client's preference for the objective (None or ``plain``: the prediction loss).

    Returns
    -------
    ObjectiveLoss
        The loss.
    """
    if kind != "binary":
        return ObjectiveLoss(kind="regression")
    y = train_labels[np.isfinite(train_labels)]
    pos = float((y > 0.5).sum())
    neg = float(len(y) - pos)
    weight = neg / pos if pos > 0 else 1.0
    if preference is None or preference.kind == "plain":
        return ObjectiveLoss(kind="binary", pos_weight=weight)
    if preference.kind == "sensitivity":
        return ObjectiveLoss(kind="binary", pos_weight=weight * preference.weight)
    return ObjectiveLoss(kind="binary", pos_weight=weight, fairness=preference)


def predict(kind: str, score: torch.Tensor) -> torch.Tensor:
    """Convert raw scores to predictions: probabilities, or LOS in days."""
    if kind == "binary":
        return torch.sigmoid(score)
    return torch.expm1(F.softplus(score))


def subgroup_gap(
    score: torch.Tensor, target: torch.Tensor, groups: torch.Tensor, metric: str
) -> torch.Tensor:
    """The largest difference across subgroups of a smooth stand-in for ``metric``.

    Parameters
    ----------
    score
        Raw scores (logits) of the rows.
    target
        Their 0/1 labels.
    groups
        Their subgroup codes (negative: missing, in no subgroup).
    metric
        ``auroc``: each subgroup's mean ``sigmoid((s_pos − s_neg) / σ)`` over its
        positive-negative pairs, σ the subgroup's score standard deviation (so that spreading
        a subgroup's scores does not count as ranking it better); ``sensitivity``: its
        positives' mean ``sigmoid(s)``.

    Returns
    -------
    torch.Tensor
        ``max − min`` over the subgroups with :data:`MIN_GROUP_ROWS` positives (and negatives,
        for AUROC); 0 with fewer than two such subgroups.
    """
    values = []
    for code in torch.unique(groups):
        if int(code) < 0:
            continue
        in_group = groups == code
        pos = score[in_group & (target > 0.5)]
        neg = score[in_group & (target <= 0.5)]
        if len(pos) < MIN_GROUP_ROWS:
            continue
        if metric == "sensitivity":
            values.append(torch.sigmoid(pos).mean())
        elif len(neg) >= MIN_GROUP_ROWS:
            # In units of the subgroup's own score spread: a ranking probability that widening
            # one subgroup's scores cannot raise without ranking it better.
            scale = score[in_group].std(unbiased=False) + _SCALE_FLOOR
            values.append(torch.sigmoid((pos[:, None] - neg[None, :]) / scale).mean())
    if len(values) < 2:
        return score.new_zeros(())
    stacked = torch.stack(values)
    return stacked.max() - stacked.min()
