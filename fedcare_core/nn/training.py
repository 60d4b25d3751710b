"""Training code every algorithm shares: losses per objective, batches, keep-best, progress.

One copy of each piece the algorithms' loops are made of, so that FedCARE's Stage 2, the
baselines and the bounds cannot drift apart:

- :func:`objective_kinds` and :func:`client_losses` — each objective's kind and loss (binary
  losses weighted from the client's own training labels, shaped by its preferences), and
  :func:`loss_groups` — the subgroup codes a fairness preference's loss reads;
- :func:`masked_objective_losses` — the mean loss of each objective over the rows labelled for
  it (NaN marks an unlabelled row; an objective with no labelled row is left out);
- :func:`epoch_batches` / :func:`batch_schedule` — shuffled mini-batches;
- :class:`KeepBest` — early stopping on the validation loss, keeping the best epoch's weights;
- :class:`ProgressFn` — the progress callback every phase reports through.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

import numpy as np
import torch
from torch import nn

from fedcare_core.data.clients import ClientData, Federation, SplitArrays
from fedcare_core.data.subgroups import subgroup_codes
from fedcare_core.objectives import make_loss
from fedcare_core.objectives.losses import ObjectiveLoss

#: BatchNorm needs at least two rows in training mode.
MIN_BATCH = 2


class ProgressFn(Protocol):
    """Progress callback: ``progress(phase, done, total)`` after each unit of a phase.

    ``phase`` names what is counted: ``"stage1"`` (rounds), ``"stage2"`` (clients
    fine-tuned), ``"local"`` (clients trained alone), ``"centralised"`` (the pooled model).
    """

    def __call__(self, phase: str, done: int, total: int, /) -> None:
        """Report that ``done`` of ``total`` units of ``phase`` are finished."""


def objective_kinds(federation: Federation) -> dict[str, str]:
    """Objective name → its kind (:mod:`fedcare_core.objectives`), for each of the federation."""
    return {o.name: o.kind for o in federation.objectives}


def client_losses(client: ClientData, kinds: Mapping[str, str]) -> dict[str, ObjectiveLoss]:
    """The loss of each of the client's objectives (positive weights from its training labels).

    Parameters
    ----------
    client
        The client (its training labels set the binary losses' positive weights).
    kinds
        :func:`objective_kinds`.

    Returns
    -------
    dict of str to ObjectiveLoss
        One loss per objective of the client, in its order.
    """
    return {
        s: make_loss(kinds[s], client.train.y[:, j], client.preferences.get(s))
        for j, s in enumerate(client.objectives)
    }


#: Objective → its rows' subgroup codes, for the losses that read them (:func:`loss_groups`).
GroupCodes = Mapping[str, torch.Tensor]


def loss_groups(losses: Mapping[str, ObjectiveLoss], split: SplitArrays) -> dict[str, torch.Tensor]:
    """Each fairness-preferring objective's subgroup codes of ``split``'s rows.

    Parameters
    ----------
    losses
        The client's losses (:func:`client_losses`).
    split
        The split whose rows the losses will see (its ``subgroups`` labels).

    Returns
    -------
    dict of str to torch.Tensor
        int64 codes, one per row (-1: the attribute is missing); only objectives whose loss
        needs them (empty for plain and sensitivity preferences).

    Raises
    ------
    ValueError
        If the split does not carry a needed attribute.
    """
    out: dict[str, torch.Tensor] = {}
    for objective, loss in losses.items():
        attribute = loss.attribute
        if attribute is None:
            continue
        if attribute not in split.subgroups:
            raise ValueError(f"the client's rows carry no {attribute!r} subgroups")
        out[objective] = torch.from_numpy(subgroup_codes(split.subgroups[attribute]))
    return out


def take_groups(groups: GroupCodes, rows: torch.Tensor) -> dict[str, torch.Tensor]:
    """``groups`` restricted to ``rows`` (indices or a mask)."""
    return {s: codes[rows] for s, codes in groups.items()}


def masked_objective_losses(
    objectives: Sequence[str],
    y: torch.Tensor,
    losses: Mapping[str, ObjectiveLoss],
    predict: Callable[[str, torch.Tensor], torch.Tensor],
    groups: GroupCodes | None = None,
) -> dict[str, torch.Tensor]:
    """Mean loss of each objective over the rows labelled for it (others skipped).

    Parameters
    ----------
    objectives
        The objective of each column of ``y``.
    y
        Labels, one column per objective; NaN marks a row not labelled for that objective.
    losses
        Loss of each objective.
    predict
        ``predict(objective, mask)``: the model's outputs for the rows where ``mask`` holds.
    groups
        The rows of ``y``'s subgroup codes for the losses that need them (:func:`loss_groups`).

    Returns
    -------
    dict of str to torch.Tensor
        The loss of each objective with at least one labelled row, in ``objectives`` order.
    """
    out: dict[str, torch.Tensor] = {}
    for j, s in enumerate(objectives):
        mask = torch.isfinite(y[:, j])
        if int(mask.sum()) == 0:
            continue
        scores, targets = predict(s, mask), y[mask, j]
        if groups is not None and s in groups:
            out[s] = losses[s](scores, targets, groups[s][mask])
        else:
            out[s] = losses[s](scores, targets)
    return out


def batch_rows(n: int, batch_size: int) -> int:
    """Rows per mini-batch: ``batch_size``, at most ``n``, at least :data:`MIN_BATCH`."""
    return max(MIN_BATCH, min(batch_size, n))


def epoch_batches(n: int, batch_size: int, rng: np.random.Generator) -> list[np.ndarray]:
    """The row indices of one shuffled pass's mini-batches.

    The incomplete last batch is dropped unless that leaves none; a batch of fewer than
    :data:`MIN_BATCH` rows (only when ``n`` < 2) is left out.

    Parameters
    ----------
    n
        Rows.
    batch_size
        Wanted rows per batch.
    rng
        Draws the pass's permutation (one ``permutation(n)`` per call).

    Returns
    -------
    list of numpy.ndarray
        Row indices of each batch.
    """
    batch = batch_rows(n, batch_size)
    order = rng.permutation(n)
    batches = (order[b * batch : (b + 1) * batch] for b in range(max(1, n // batch)))
    return [idx for idx in batches if len(idx) >= MIN_BATCH]


def batch_schedule(
    n: int, batch_size: int, epochs: int, max_steps: int | None, rng: np.random.Generator
) -> list[np.ndarray]:
    """Row indices of each mini-batch: ``epochs`` passes of :func:`epoch_batches`, capped.

    Parameters
    ----------
    n, batch_size, rng
        As for :func:`epoch_batches`.
    epochs
        Passes over the rows.
    max_steps
        Stop after this many batches (None: no cap).

    Returns
    -------
    list of numpy.ndarray
        Row indices of each batch, in order.
    """
    out: list[np.ndarray] = []
    for _ in range(epochs):
        for idx in epoch_batches(n, batch_size, rng):
            out.append(idx)
            if max_steps is not None and len(out) >= max_steps:
                return out
    return out


class KeepBest:
    """Early stopping on the validation loss, keeping the weights of the best epoch.

    The first epoch recorded is always kept; a later one replaces it when its loss is finite and
    lower. Without validation rows there is nothing to select on: every epoch is kept in turn (the
    last one is deployed) and training never stops early. A diverged epoch (loss NaN or
    infinite) is never an improvement.

    Parameters
    ----------
    model
        The model being trained (its state is copied when an epoch is kept).
    patience
        Epochs without improvement that end training (None: never).
    has_validation
        Whether there are validation rows to select on.
    """

    def __init__(self, model: nn.Module, patience: int | None, *, has_validation: bool) -> None:
        self.model = model
        self.patience = patience
        self.has_validation = has_validation
        self.best_loss = float("inf")
        self.best_epoch = 0
        self.since_best = 0
        self.state = copy.deepcopy(model.state_dict())
        self._seen = False

    def update(self, epoch: int, loss: float) -> bool:
        """Record epoch ``epoch``'s validation loss; returns whether the epoch was kept.

        The first epoch recorded is always kept (epoch 0 may be recorded: the starting model).
        """
        improved = (
            not self._seen
            or not self.has_validation
            or (bool(np.isfinite(loss)) and loss < self.best_loss)
        )
        self._seen = True
        if improved:
            self.best_loss, self.best_epoch, self.since_best = loss, epoch, 0
            self.state = copy.deepcopy(self.model.state_dict())
        else:
            self.since_best += 1
        return improved

    @property
    def exhausted(self) -> bool:
        """Whether ``patience`` epochs have passed without improvement."""
        return self.patience is not None and self.since_best >= self.patience

    def restore(self) -> None:
        """Load the kept epoch's weights into the model and put it in evaluation mode."""
        self.model.load_state_dict(self.state)
        self.model.eval()
