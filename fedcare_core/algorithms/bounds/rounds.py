"""The two bounds the paper lacks (SPEC §4): Local and Centralised.

Both train a FullMLP on union vectors with the baselines' optimiser, for up to
``bound_epochs`` epochs, and deploy the epoch with the lowest validation loss
(``bound_patience`` epochs without improvement end training), as FedCARE's Stage 2 does.

- **Local**: each client alone, on all of its features, its own objectives; no communication.
- **Centralised**: every client's training rows pooled (each row keeps the features and labels
  its client holds), one head per objective of the federation; validated on the pooled
  validation rows and deployed to every client. It is the ceiling for federated learning over
  these clients' data, not over the whole dataset (no row gains features or labels its client
  lacks).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import torch

from fedcare_core.algorithms.bounds.options import BoundOptions
from fedcare_core.algorithms.union.common import (
    build_full_mlp,
    make_optimizer,
    multi_objective_loss,
)
from fedcare_core.config import BaselineConfig, ModelConfig
from fedcare_core.config.seeds import derive_rng
from fedcare_core.data.clients import ClientData, Federation
from fedcare_core.nn.cross_fit import FoldSelection, patient_folds, validation_folds
from fedcare_core.nn.models import FullMLP, MultiObjectiveModel
from fedcare_core.nn.param_vectors import ParamLayout, get_buffers, get_params, param_layout
from fedcare_core.nn.seeding import seed_torch
from fedcare_core.nn.training import (
    GroupCodes,
    KeepBest,
    batch_schedule,
    client_losses,
    loss_groups,
    take_groups,
)
from fedcare_core.objectives import make_loss, predict
from fedcare_core.objectives.losses import ObjectiveLoss
from fedcare_core.stage1.loop import Stage1Result


@dataclass(frozen=True)
class _LabelledArrays:
    """Inputs and labels with one column per objective (NaN: not labelled for it).

    ``groups``: the rows' subgroup codes for a fairness preference's loss.
    """

    x: np.ndarray
    y: np.ndarray
    groups: GroupCodes = field(default_factory=dict)

    @property
    def n(self) -> int:
        """Number of rows."""
        return len(self.y)

    def take(self, rows: np.ndarray) -> _LabelledArrays:
        """The rows ``rows`` (indices, in that order)."""
        groups = take_groups(self.groups, torch.from_numpy(rows))
        return _LabelledArrays(self.x[rows], self.y[rows], groups)


@dataclass(frozen=True)
class CrossFit:
    """How a fit scores its validation rows by models they did not choose (cross-fitting).

    ``folds``: :func:`~fedcare_core.nn.cross_fit.patient_folds` over the validation rows (none:
    too few patients, nothing is cross-fitted); ``kinds``: objective → kind.
    """

    folds: Sequence[np.ndarray]
    kinds: Mapping[str, str]


@dataclass(frozen=True)
class FitResult:
    """A trained bound model and its trace.

    Parameters
    ----------
    model
        The deployed model (best validation epoch), in evaluation mode.
    train_loss, val_loss
        Per-epoch mean training loss and validation loss (sums over objectives).
    best_epoch
        1-based epoch kept.
    stopped
        ``"budget"`` or ``"patience"``.
    validation_outputs
        Objective → each validation row's prediction by the epoch the other folds' loss kept
        (empty without a :class:`CrossFit`).
    """

    model: FullMLP
    train_loss: list[float]
    val_loss: list[float]
    best_epoch: int
    stopped: str
    validation_outputs: dict[str, np.ndarray] = field(default_factory=dict)


def _loss_value(
    model: MultiObjectiveModel,
    losses: Mapping[str, ObjectiveLoss],
    objectives: Sequence[str],
    data: _LabelledArrays,
) -> float:
    if len(data.y) == 0:
        return float("nan")
    model.eval()
    with torch.no_grad():
        parts = multi_objective_loss(
            model,
            losses,
            objectives,
            torch.from_numpy(data.x),
            torch.from_numpy(data.y),
            data.groups,
        )
    return float(sum(float(v) for v in parts.values()))


def fit(
    model: FullMLP,
    objectives: Sequence[str],
    losses: Mapping[str, ObjectiveLoss],
    train: _LabelledArrays,
    val: _LabelledArrays,
    config: BaselineConfig,
    seed: int,
    *key: object,
    cross_fit: CrossFit | None = None,
) -> FitResult:
    """Train ``model`` on ``train`` with early stopping on ``val`` (no communication).

    Parameters
    ----------
    model
        The initialised FullMLP (trained in place).
    objectives
        Objective of each label column.
    losses
        Loss of each objective.
    train, val
        Union vectors and labels.
    config
        Optimiser, batch size, ``bound_epochs`` and ``bound_patience``.
    seed, key
        Name the random streams (mini-batches, dropout).
    cross_fit
        The validation folds to cross-fit the validation predictions over (None: none).

    Returns
    -------
    FitResult
        The model of the best validation epoch, the loss traces and the cross-fitted
        validation predictions.
    """
    opt = make_optimizer(list(model.parameters()), config)
    x, y = torch.from_numpy(train.x), torch.from_numpy(train.y)
    rng = derive_rng(seed, "bound-batch", *key)
    seed_torch(seed, "bound-dropout", *key)
    options = BoundOptions.of(config)
    keep = KeepBest(model, options.bound_patience, has_validation=len(val.y) > 0)
    folds = FoldSelection(model, cross_fit.folds) if cross_fit and cross_fit.folds else None
    train_trace: list[float] = []
    val_trace: list[float] = []
    stopped = "budget"
    for epoch in range(1, options.bound_epochs + 1):
        model.train()
        total, steps = 0.0, 0
        for idx in batch_schedule(len(train.y), config.batch_size, 1, None, rng):
            rows = torch.from_numpy(idx)
            parts = multi_objective_loss(
                model, losses, objectives, x[rows], y[rows], take_groups(train.groups, rows)
            )
            if not parts:
                continue
            loss = torch.stack(list(parts.values())).sum()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += float(loss.detach())
            steps += 1
        train_trace.append(total / max(steps, 1))
        val_trace.append(_loss_value(model, losses, objectives, val))
        keep.update(epoch, val_trace[-1])
        if folds is not None:
            folds.update_by(val, lambda rows: _loss_value(model, losses, objectives, rows))
        if keep.exhausted:
            stopped = "patience"
            break
    outputs: dict[str, np.ndarray] = {}
    if folds is not None and cross_fit is not None:
        outputs = folds.out_of_fold(val, partial(_predictions, model, objectives, cross_fit.kinds))
    keep.restore()
    return FitResult(model, train_trace, val_trace, keep.best_epoch, stopped, outputs)


def _predictions(
    model: MultiObjectiveModel,
    objectives: Sequence[str],
    kinds: Mapping[str, str],
    rows: _LabelledArrays,
) -> dict[str, np.ndarray]:
    """The model's predictions of ``rows`` for each objective (float64)."""
    x = torch.from_numpy(rows.x)
    with torch.no_grad():
        return {s: predict(kinds[s], model(x, s)).numpy().astype(np.float64) for s in objectives}


def fit_local_client(
    client: ClientData,
    kinds: Mapping[str, str],
    width: int,
    model_config: ModelConfig,
    config: BaselineConfig,
    seed: int,
) -> FitResult:
    """Train one client alone (the Local bound), on its union vectors.

    Parameters
    ----------
    client
        The client's union view.
    kinds
        Objective name → kind.
    width
        The union vector's width.
    model_config
        FullMLP widths.
    config
        Training settings.
    seed
        Experiment seed (the client's streams are keyed by its id).

    Returns
    -------
    FitResult
        The client's model (heads for its own objectives only) and its cross-fitted
        validation predictions.
    """
    model = build_full_mlp(width, client.objectives, model_config, seed, "local", client.client_id)
    losses = client_losses(client, kinds)
    train, val = client.train, client.val
    folds = validation_folds(val, seed, client.client_id)
    return fit(
        model,
        client.objectives,
        losses,
        _LabelledArrays(train.x_common, train.y, loss_groups(losses, train)),
        _LabelledArrays(val.x_common, val.y, loss_groups(losses, val)),
        config,
        seed,
        "local",
        client.client_id,
        cross_fit=CrossFit(folds, kinds),
    )


def no_rounds(
    objectives: tuple[str, ...], notes: list[str], model: MultiObjectiveModel | None = None
) -> Stage1Result:
    """The rounds' result of a method without federated rounds (a bound).

    Parameters
    ----------
    objectives
        The federation's objectives.
    notes
        What the document's ``stage1.notes`` says.
    model
        The pooled model (Centralised), stored as the global model; None: no parameters.

    Returns
    -------
    Stage1Result
        No rounds, not converged.
    """
    if model is not None:
        params, buffers, layout = get_params(model), get_buffers(model), param_layout(model)
    else:
        params = buffers = np.zeros(0, dtype=np.float32)
        layout = ParamLayout(total=0, backbone=slice(0, 0), heads={})
    return Stage1Result(params, buffers, [], False, objectives, layout, notes)


def pooled(clients: Sequence[ClientData], objectives: Sequence[str], split: str) -> _LabelledArrays:
    """Every client's ``split`` rows stacked, labels spread to one column per objective.

    Parameters
    ----------
    clients
        Union views of the clients.
    objectives
        The federation's objectives (label columns of the result).
    split
        ``"train"``, ``"val"`` or ``"test"``.

    Returns
    -------
    LabelledArrays
        Stacked union vectors; a row's label is NaN for every objective its client does not
        pursue.
    """
    xs: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    for c in clients:
        part = c.split(split)
        y = np.full((part.n, len(objectives)), np.nan, dtype=np.float32)
        for j, s in enumerate(c.objectives):
            y[:, objectives.index(s)] = part.y[:, j]
        xs.append(part.x_common)
        ys.append(y)
    return _LabelledArrays(np.concatenate(xs), np.concatenate(ys))


def run_centralised(
    federation: Federation,
    model_config: ModelConfig,
    config: BaselineConfig,
    seed: int,
) -> FitResult:
    """Train one FullMLP on every client's pooled training rows (the Centralised bound).

    Parameters
    ----------
    federation
        The union view of the clients.
    model_config
        FullMLP widths.
    config
        Training settings.
    seed
        Experiment seed.

    Returns
    -------
    FitResult
        The model every client deploys. Positive weights of the binary losses come from the
        pooled training labels; the sites' preferences do not apply (the pooled model is no
        site's).
    """
    objectives = list(federation.objective_names)
    train = pooled(federation.clients, objectives, "train")
    val = pooled(federation.clients, objectives, "val")
    losses = {o.name: make_loss(o.kind, train.y[:, j]) for j, o in enumerate(federation.objectives)}
    model = build_full_mlp(federation.common_width, objectives, model_config, seed, "centralised")
    kinds = {o.name: o.kind for o in federation.objectives}
    folds = patient_folds(_pooled_patients(federation.clients), seed, "centralised")
    cross = CrossFit(folds, kinds)
    return fit(model, objectives, losses, train, val, config, seed, "centralised", cross_fit=cross)


def _pooled_patients(clients: Sequence[ClientData]) -> np.ndarray:
    """Each pooled validation row's patient (as :func:`pooled` stacks them), numbered apart."""
    parts: list[np.ndarray] = []
    offset = 0
    for c in clients:
        groups = np.arange(c.val.n) if c.val.groups is None else c.val.groups
        codes = np.unique(groups, return_inverse=True)[1].reshape(-1)
        parts.append(codes + offset)
        offset += int(codes.max()) + 1 if len(codes) else 0
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def client_slices(
    outputs: Mapping[str, np.ndarray], clients: Sequence[ClientData]
) -> list[dict[str, np.ndarray]]:
    """Pooled validation predictions (in :func:`pooled`'s order) cut back into each client's."""
    out: list[dict[str, np.ndarray]] = []
    start = 0
    for c in clients:
        stop = start + c.val.n
        out.append({s: values[start:stop] for s, values in outputs.items()})
        start = stop
    return out
