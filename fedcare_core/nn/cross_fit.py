"""Validation predictions that did not choose the epoch they come from (cross-fitting).

Early stopping keeps the epoch whose validation loss is lowest, so the validation rows have
seen the model that is deployed: a calibration or an interval fitted on its predictions there
inherits the selection's optimism (issue 31: the recommended preset's readmission slope was
0.95 on the validation rows that chose the epoch and 0.80 on test). Cross-fitting removes it:
the validation patients are dealt into :data:`FOLDS` folds; each fold's rows are predicted by
the epoch that the loss over *the other folds' rows* would have kept. Every row then gets a
prediction from a model selected without it, on most of the rows that chose the deployed
model, while the deployed model is still the epoch the whole validation split chose. The
folds cost one extra validation pass per epoch and a copy of the weights per fold.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, Self, TypeVar

import numpy as np
import torch
from torch import nn

from fedcare_core.config.seeds import derive_rng
from fedcare_core.data.clients import SplitArrays

__all__ = ["FOLDS", "FoldSelection", "Rows", "patient_folds", "validation_folds"]

#: Folds the validation patients are dealt into.
FOLDS = 5


class Rows(Protocol):
    """Validation rows a model is scored on: their count, and a subset of them."""

    @property
    def n(self) -> int:
        """Number of rows."""
        ...

    def take(self, rows: np.ndarray) -> Self:
        """The rows ``rows`` (indices, in that order)."""
        ...


R = TypeVar("R", bound=Rows)


def validation_folds(
    split: SplitArrays, seed: int, client_id: int, folds: int = FOLDS
) -> list[np.ndarray]:
    """The validation rows dealt into ``folds`` folds, a patient's rows in one fold.

    Parameters
    ----------
    split
        The client's validation split (its ``groups`` keep a patient's rows together; without
        them each row is its own patient).
    seed, client_id
        Key the draw (its own stream: no other random stream moves).
    folds
        How many folds (at least 2).

    Returns
    -------
    list of numpy.ndarray
        Each fold's row indices (sorted), or none where the split has fewer than two patients
        per fold.
    """
    groups = np.arange(split.n) if split.groups is None else split.groups
    return patient_folds(groups, seed, client_id, folds)


def patient_folds(
    groups: np.ndarray, seed: int, key: object, folds: int = FOLDS
) -> list[np.ndarray]:
    """Rows dealt into ``folds`` folds by their patient ``groups`` (see :func:`validation_folds`).

    ``key`` names the draw's stream (a client's id, or a name for pooled rows).
    """
    if folds < 2:
        raise ValueError(f"cross-fitting needs at least two folds, not {folds}")
    patients = np.unique(groups)
    if len(patients) < 2 * folds:
        return []
    order = derive_rng(seed, "validation-folds", key).permutation(patients)
    fold_of = dict(zip(order.tolist(), (np.arange(len(order)) % folds).tolist(), strict=True))
    assigned = np.array([fold_of[g] for g in groups.tolist()], dtype=np.int64)
    return [np.flatnonzero(assigned == f) for f in range(folds)]


class FoldSelection:
    """For each validation fold, the weights of the epoch the other folds' loss keeps.

    Parameters
    ----------
    model
        The model being trained (its state is copied when a fold's best epoch changes).
    folds
        :func:`validation_folds`' row sets (at least two).
    """

    def __init__(self, model: nn.Module, folds: Sequence[np.ndarray]) -> None:
        if len(folds) < 2:
            raise ValueError(f"cross-fitting needs at least two folds, got {len(folds)}")
        self.model = model
        self.folds = [np.asarray(f) for f in folds]
        n = int(sum(len(f) for f in self.folds))
        #: Row indices each fold's selection reads: every other fold's rows.
        self.selecting = [np.setdiff1d(np.arange(n), f) for f in self.folds]
        self.best_loss = [float("inf")] * len(self.folds)
        self.states: list[dict[str, torch.Tensor] | None] = [None] * len(self.folds)

    def update_by(self, split: R, loss: Callable[[R], float]) -> None:
        """Record the current epoch's ``loss`` of each fold's selecting rows of ``split``."""
        self.update([loss(split.take(rows)) for rows in self.selecting])

    def update(self, selecting_losses: Sequence[float]) -> None:
        """Record the current epoch's loss over each fold's :attr:`selecting` rows.

        The first epoch recorded is always kept; a later one replaces it when its loss is
        finite and lower.
        """
        for f, loss in enumerate(selecting_losses):
            finite = bool(np.isfinite(loss))
            if self.states[f] is None or (finite and loss < self.best_loss[f]):
                self.best_loss[f] = float(loss) if finite else float("inf")
                self.states[f] = copy.deepcopy(self.model.state_dict())

    def out_of_fold(
        self,
        split: R,
        predict: Callable[[R], Mapping[str, np.ndarray]],
    ) -> dict[str, np.ndarray]:
        """Each validation row's predictions by the epoch the other folds chose.

        Leaves the model holding the last state it loaded: restore the deployed epoch after.

        Parameters
        ----------
        split
            The validation split the folds index.
        predict
            The model's predictions of some rows: objective → float64 (n,).

        Returns
        -------
        dict of str to numpy.ndarray
            Objective → one prediction per validation row, in the split's order (none before
            any epoch was recorded).
        """
        if any(state is None for state in self.states):
            return {}
        out: dict[str, np.ndarray] = {}
        for rows, state in zip(self.folds, self.states, strict=True):
            assert state is not None
            self.model.load_state_dict(state)
            self.model.eval()
            for objective, values in predict(split.take(rows)).items():
                out.setdefault(objective, np.full(split.n, np.nan))[rows] = values
        return out
