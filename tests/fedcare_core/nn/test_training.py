"""The shared training pieces: keep-best early stopping, batches, masked losses."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from fedcare_core.nn.training import (
    MIN_BATCH,
    KeepBest,
    batch_schedule,
    epoch_batches,
    masked_objective_losses,
)


def _model(value: float) -> nn.Linear:
    m = nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        m.weight.fill_(value)
    return m


def _run(losses: list[float], patience: int | None, *, has_validation: bool = True):
    model = _model(0.0)
    keep = KeepBest(model, patience, has_validation=has_validation)
    epochs = 0
    for epoch, loss in enumerate(losses, start=1):
        with torch.no_grad():
            model.weight.fill_(float(epoch))  # the weights "of" this epoch
        keep.update(epoch, loss)
        epochs = epoch
        if keep.exhausted:
            break
    keep.restore()
    return keep, float(model.weight.detach()), epochs


def test_keeps_the_lowest_finite_loss_and_restores_its_weights():
    keep, weight, epochs = _run([3.0, 2.0, 2.5, 1.0, 4.0], patience=None)
    assert (keep.best_epoch, weight, epochs) == (4, 4.0, 5)
    assert not keep.model.training


def test_patience_ends_training_after_that_many_epochs_without_improvement():
    keep, weight, epochs = _run([3.0, 2.0, 2.5, 2.1, 1.0], patience=2)
    assert (keep.best_epoch, weight, epochs) == (2, 2.0, 4)


def test_a_diverged_epoch_is_never_an_improvement():
    keep, weight, _ = _run([3.0, float("nan"), float("inf"), 2.9], patience=None)
    assert (keep.best_epoch, weight) == (4, 4.0)
    keep, _, epochs = _run([3.0, float("nan"), float("nan")], patience=2)
    assert (keep.best_epoch, epochs) == (1, 3)


def test_without_validation_rows_the_last_epoch_is_kept_and_training_never_stops():
    keep, weight, epochs = _run([float("nan")] * 5, patience=1, has_validation=False)
    assert (keep.best_epoch, weight, epochs) == (5, 5.0, 5)


def test_the_first_epoch_is_kept_even_when_it_diverged():
    keep, weight, _ = _run([float("nan"), float("nan")], patience=None)
    assert (keep.best_epoch, weight) == (1, 1.0)


def test_epoch_batches_drop_the_incomplete_batch_and_draw_one_permutation():
    rng, twin = np.random.default_rng(0), np.random.default_rng(0)
    batches = epoch_batches(10, 4, rng)
    order = twin.permutation(10)
    assert [b.tolist() for b in batches] == [order[:4].tolist(), order[4:8].tolist()]
    assert rng.random() == twin.random()  # no other draw


def test_a_batch_below_batchnorms_minimum_is_left_out():
    assert epoch_batches(1, 64, np.random.default_rng(0)) == []
    assert [len(b) for b in epoch_batches(3, 64, np.random.default_rng(0))] == [3]
    assert MIN_BATCH == 2


def test_batch_schedule_runs_epochs_and_stops_at_max_steps():
    assert len(batch_schedule(10, 4, 3, None, np.random.default_rng(0))) == 6
    assert len(batch_schedule(10, 4, 3, 5, np.random.default_rng(0))) == 5


def test_masked_losses_skip_unlabelled_rows_and_objectives_without_labels():
    y = torch.tensor([[1.0, float("nan")], [float("nan"), float("nan")], [3.0, float("nan")]])
    seen = {}

    def predict(objective, mask):
        seen[objective] = mask.tolist()
        return torch.zeros(int(mask.sum()))

    losses = {"a": lambda pred, target: (target - pred).mean(), "b": None}
    out = masked_objective_losses(["a", "b"], y, losses, predict)
    assert list(out) == ["a"]
    assert out["a"].item() == pytest.approx(2.0)
    assert seen == {"a": [True, False, True]}
