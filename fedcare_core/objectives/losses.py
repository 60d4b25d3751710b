"""The objective kinds' losses (SPEC §2); each kind chooses its own (:mod:`.kind`).

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
    """Loss of one objective at one client; each objective kind gives its own (a subclass).

    ``kind``: the objective's kind; ``pos_weight``: the positive class's weight (a risk's
    loss; 1 otherwise); ``fairness``: a fairness preference (None: none), whose attribute's
    subgroup codes come as ``groups``.
    """

    kind: str
    pos_weight: float = 1.0
    fairness: Preference | None = None

    @property
    def attribute(self) -> str | None:
        """The sensitive attribute whose subgroup codes the loss needs (None: none)."""
        return None if self.fairness is None else self.fairness.attribute

    def __call__(
        self, score: torch.Tensor, target: torch.Tensor, groups: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Mean loss of raw scores against targets.

        ``groups``: the rows' subgroup codes of :attr:`attribute`, needed by a fairness
        preference (a ``ValueError`` without them).
        """
        raise NotImplementedError(f"{type(self).__name__} has no loss")


@dataclass(frozen=True)
class WeightedBCE(ObjectiveLoss):
    """Weighted binary cross-entropy on logits, plus γ times a fairness preference's gap."""

    def __call__(
        self, score: torch.Tensor, target: torch.Tensor, groups: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Mean loss of logits against 0/1 targets (:class:`ObjectiveLoss`)."""
        pw = torch.tensor(self.pos_weight, dtype=score.dtype)
        loss = F.binary_cross_entropy_with_logits(score, target, pos_weight=pw)
        if self.fairness is None:
            return loss
        if groups is None:
            raise ValueError(f"a fair({self.fairness.attribute}) loss needs the rows' subgroups")
        gap = subgroup_gap(score, target, groups, self.fairness.metric)
        return loss + self.fairness.weight * gap


@dataclass(frozen=True)
class LogHuber(ObjectiveLoss):
    """Huber loss of ``softplus(score)`` against ``log1p(target)`` (a non-negative quantity)."""

    def __call__(
        self, score: torch.Tensor, target: torch.Tensor, groups: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Mean loss of raw scores against non-negative targets (:class:`ObjectiveLoss`)."""
        return F.huber_loss(F.softplus(score), torch.log1p(target), delta=_HUBER_DELTA)


def positive_weight(train_labels: np.ndarray) -> float:
    """Negatives / positives among the labelled 0/1 rows (NaN ignored; 1 without a positive)."""
    y = train_labels[np.isfinite(train_labels)]
    pos = float((y > 0.5).sum())
    neg = float(len(y) - pos)
    return neg / pos if pos > 0 else 1.0


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
