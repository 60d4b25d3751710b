"""Stage 2 (paper Algorithm 2): per-client personalised fine-tuning, with no communication.

Each client builds φ_k from the converged backbone w* and a personal head per objective that
reads ``[h(x_c), x_u]``, then descends along ``Σ_s μ*_s g_s`` with μ* the local min-norm weights
(eq. 14) until ``‖Σ μ* g‖² ≤ ε_k`` or its budget is spent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from fedcare_core.config import ModelConfig, Stage2Config
from fedcare_core.config.seeds import derive_rng
from fedcare_core.data.clients import ClientData, SplitArrays
from fedcare_core.moo import min_norm_weights
from fedcare_core.nn.cross_fit import FoldSelection, validation_folds
from fedcare_core.nn.models import PersonalModel
from fedcare_core.nn.optim import local_optimizer
from fedcare_core.nn.seeding import seed_torch
from fedcare_core.nn.training import (
    GroupCodes,
    KeepBest,
    batch_rows,
    client_losses,
    epoch_batches,
    loss_groups,
    masked_objective_losses,
    take_groups,
)
from fedcare_core.objectives import predict
from fedcare_core.objectives.losses import ObjectiveLoss


@dataclass(frozen=True)
class Stage2Result:
    """A client's personalised model and the trace of its fine-tuning.

    Parameters
    ----------
    client_id
        The client.
    model
        φ_k*, in evaluation mode (the epoch with the lowest validation loss).
    mu_mean
        Mean μ*_s over all steps, per objective.
    mu_trace
        μ* per epoch (mean over the epoch's steps), per objective.
    train_loss, val_loss
        Per-epoch mean training loss and validation loss (sum over objectives).
    steps
        Optimiser steps taken.
    best_epoch
        1-based epoch whose weights were kept.
    stopped
        Why training ended: ``"budget"``, ``"patience"`` or ``"epsilon"``.
    validation_outputs
        Objective → each validation row's prediction by the epoch the other folds of the
        validation rows kept (:mod:`fedcare_core.nn.cross_fit`), what the deployed model is
        calibrated on; empty with too few validation patients. Stays at the client.
    """

    client_id: int
    model: PersonalModel
    mu_mean: dict[str, float]
    mu_trace: list[dict[str, float]]
    train_loss: list[float]
    val_loss: list[float]
    steps: int
    best_epoch: int
    stopped: str
    validation_outputs: dict[str, np.ndarray] = field(default_factory=dict)


def build_personal_model(
    backbone_state: Mapping[str, torch.Tensor],
    client: ClientData,
    model_config: ModelConfig,
    seed: int,
) -> PersonalModel:
    """φ_k^0: the backbone w* (eq. 12) and freshly initialised personal heads."""
    seed_torch(seed, "stage2-init", client.client_id)
    model = PersonalModel(
        client.common_encoder.width, client.private_encoder.width, client.objectives, model_config
    )
    model.load_backbone(backbone_state)
    return model


def warm_start_heads(
    model: PersonalModel, global_heads: Mapping[str, Mapping[str, torch.Tensor]]
) -> None:
    """Start each personal head as w*'s head of its objective, private-input weights zero.

    The first layer reads ``[h(x_c), x_u]``: its columns for ``h`` are the global head's, those
    for ``x_u`` zero; the later layers are copied. The model then predicts as w* (to rounding).
    """
    rep = model.backbone.proj.out_features
    with torch.no_grad():
        for s in model.objectives:
            state = {k: v.clone() for k, v in global_heads[s].items()}
            first = state["net.0.weight"]
            if first.shape[1] != rep:
                raise ValueError(f"w*'s head of {s!r} reads {first.shape[1]} inputs, not {rep}")
            zeros = first.new_zeros(first.shape[0], model.private_dim)
            state["net.0.weight"] = torch.cat([first, zeros], dim=1)
            model.heads[s].load_state_dict(state)


def _tensors(split: SplitArrays) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return (
        torch.from_numpy(split.x_common),
        torch.from_numpy(split.x_private),
        torch.from_numpy(split.y),
    )


def objective_losses(
    model: PersonalModel,
    losses: Mapping[str, ObjectiveLoss],
    objectives: tuple[str, ...],
    xc: torch.Tensor,
    xu: torch.Tensor,
    y: torch.Tensor,
    groups: GroupCodes | None = None,
) -> dict[str, torch.Tensor]:
    """Mean loss of each objective over the rows labelled for it (others skipped).

    ``groups``: the rows' subgroup codes for a fairness preference's loss
    (:func:`~fedcare_core.nn.training.loss_groups`).
    """
    z = torch.cat([model.backbone(xc), xu], dim=1)
    return masked_objective_losses(
        objectives, y, losses, lambda s, mask: model.heads[s](z[mask]), groups
    )


def _val_loss(
    model: PersonalModel,
    losses: Mapping[str, ObjectiveLoss],
    client: ClientData,
    split: SplitArrays,
) -> float:
    if split.n == 0:
        return float("nan")
    model.eval()
    with torch.no_grad():
        xc, xu, y = _tensors(split)
        groups = loss_groups(losses, split)
        parts = objective_losses(model, losses, client.objectives, xc, xu, y, groups)
    return float(sum(float(v) for v in parts.values()))


def _descend(
    parts: Mapping[str, torch.Tensor], params: list[torch.nn.Parameter], solver: str
) -> tuple[np.ndarray, float]:
    """Set every parameter's gradient to the min-norm direction ``Σ_s μ*_s g_s`` (eq. 14).

    Parameters
    ----------
    parts
        The batch's loss of each objective (at least one).
    params
        The parameters the direction is over.
    solver
        The min-norm solver.

    Returns
    -------
    tuple[numpy.ndarray, float]
        μ* (one weight per entry of ``parts``, in its order) and ``‖Σ μ* g‖²``.
    """
    names = list(parts)
    if len(names) == 1:
        for p in params:
            p.grad = None
        parts[names[0]].backward()
        return np.ones(1), sum(float((p.grad**2).sum()) for p in params if p.grad is not None)
    grads = []
    for s in names:
        gs = torch.autograd.grad(parts[s], params, retain_graph=True, allow_unused=True)
        grads.append(
            torch.cat(
                [
                    (g if g is not None else torch.zeros_like(p)).reshape(-1)
                    for g, p in zip(gs, params, strict=True)
                ]
            )
        )
    mat = torch.stack(grads).double()
    mu, sq = min_norm_weights((mat @ mat.T).numpy(), method=solver)
    direction = (torch.from_numpy(mu) @ mat).float()
    pos = 0
    for p in params:
        k = p.numel()
        p.grad = direction[pos : pos + k].view_as(p).clone()
        pos += k
    return mu, sq


class _Selection:
    """The epoch kept on the whole validation split, and the one each fold's complement keeps."""

    def __init__(
        self,
        model: PersonalModel,
        losses: Mapping[str, ObjectiveLoss],
        client: ClientData,
        keep: KeepBest,
        seed: int,
    ) -> None:
        self.model, self.losses, self.client, self.keep = model, losses, client, keep
        folds = validation_folds(client.val, seed, client.client_id)
        self.folds = FoldSelection(model, folds) if folds else None
        self.selecting = [torch.from_numpy(r) for r in self.folds.selecting] if self.folds else []

    def record(self, epoch: int) -> float:
        """Score the current weights on the validation rows; returns the whole split's loss."""
        val = _val_loss(self.model, self.losses, self.client, self.client.val)
        self.keep.update(epoch, val)
        if self.folds is not None:
            self.folds.update(self._selecting_losses())
        return val

    def _selecting_losses(self) -> list[float]:
        """The loss over each fold's selecting rows (the other folds'), from one pass."""
        split, objectives = self.client.val, self.client.objectives
        xc, xu, y = _tensors(split)
        groups = loss_groups(self.losses, split)
        self.model.eval()
        with torch.no_grad():
            z = torch.cat([self.model.backbone(xc), xu], dim=1)
            scores = {s: self.model.heads[s](z) for s in objectives}
            out = []
            for rows in self.selecting:
                part = {s: values[rows] for s, values in scores.items()}

                def outputs(s: str, mask: torch.Tensor, part: dict = part) -> torch.Tensor:
                    return part[s][mask]

                parts = masked_objective_losses(
                    objectives, y[rows], self.losses, outputs, take_groups(groups, rows)
                )
                out.append(float(sum(float(v) for v in parts.values())))
        return out

    def out_of_fold(self, kinds: Mapping[str, str]) -> dict[str, np.ndarray]:
        """Each validation row predicted by the epoch the other folds kept (before restoring)."""
        if self.folds is None:
            return {}
        model, objectives = self.model, self.client.objectives

        def predictions(split: SplitArrays) -> dict[str, np.ndarray]:
            xc, xu, _ = _tensors(split)
            with torch.no_grad():
                return {
                    s: predict(kinds[s], model(xc, xu, s)).numpy().astype(np.float64)
                    for s in objectives
                }

        return self.folds.out_of_fold(self.client.val, predictions)


@dataclass
class _Trace:
    """What fine-tuning records, epoch by epoch."""

    objectives: tuple[str, ...]
    steps: int = 0
    stopped: str = "budget"
    mu_trace: list[dict[str, float]] = field(default_factory=list)
    train_loss: list[float] = field(default_factory=list)
    val_loss: list[float] = field(default_factory=list)
    mu_sum: dict[str, float] = field(default_factory=dict)

    def mu_mean(self) -> dict[str, float]:
        return {s: self.mu_sum.get(s, 0.0) / max(self.steps, 1) for s in self.objectives}


def fine_tune(
    backbone_state: Mapping[str, torch.Tensor],
    client: ClientData,
    kinds: Mapping[str, str],
    model_config: ModelConfig,
    config: Stage2Config,
    seed: int,
    global_heads: Mapping[str, Mapping[str, torch.Tensor]] | None = None,
) -> Stage2Result:
    """Personalise the backbone at one client (Algorithm 2).

    Parameters
    ----------
    backbone_state
        State dict of the converged Stage 1 backbone w*.
    client
        The client's data (common and private features).
    kinds
        Objective name → its kind (:mod:`fedcare_core.objectives`).
    model_config, config
        Architecture and Stage 2 hyper-parameters.
    seed
        Experiment seed; the client's streams are keyed by its id.
    global_heads
        w*'s head state dicts by objective; needed with ``config.head_init == "global"``.

    Returns
    -------
    Stage2Result
        φ_k* and its μ* and loss traces (``best_epoch`` 0: the starting model, w*, was kept).
    """
    model = build_personal_model(backbone_state, client, model_config, seed)
    warm = config.head_init == "global"
    if warm:
        if global_heads is None:
            raise ValueError("stage2.head_init 'global' needs w*'s heads")
        warm_start_heads(model, global_heads)
    losses = client_losses(client, kinds)
    params, groups = trainable(model, config)
    opt = local_optimizer(groups, config.optimizer, lr=config.lr, weight_decay=config.weight_decay)
    anchor = _BackboneAnchor.of(model, config)
    rng = derive_rng(seed, "stage2-batch", client.client_id)
    seed_torch(seed, "stage2-dropout", client.client_id)
    keep = KeepBest(model, config.patience, has_validation=client.val.n > 0)
    select = _Selection(model, losses, client, keep, seed)
    trace = _Trace(client.objectives, mu_sum=dict.fromkeys(client.objectives, 0.0))
    if warm:  # the start is w* itself: a candidate for deployment too
        select.record(0)
    for epoch in range(1, config.epochs + 1):
        _train_epoch(model, params, opt, losses, client, config, rng, trace, anchor)
        trace.val_loss.append(select.record(epoch))
        if trace.stopped == "epsilon":
            break
        if keep.exhausted:
            trace.stopped = "patience"
            break
    validation = select.out_of_fold(kinds)
    keep.restore()
    return Stage2Result(
        client_id=client.client_id,
        model=model,
        mu_mean=trace.mu_mean(),
        mu_trace=trace.mu_trace,
        train_loss=trace.train_loss,
        val_loss=trace.val_loss,
        steps=trace.steps,
        best_epoch=keep.best_epoch,
        stopped=trace.stopped,
        validation_outputs=validation,
    )


def trainable(
    model: PersonalModel, config: Stage2Config
) -> tuple[list[torch.nn.Parameter], list[Any]]:
    """The parameters the min-norm direction spans, and the optimiser's parameter groups.

    The paper's Stage 2 trains everything at ``lr``. ``backbone_lr_scale`` 0 leaves the
    backbone out (frozen); another scale gives it a group of its own at ``scale · lr``.
    """
    backbone = list(model.backbone.parameters())
    heads = list(model.heads.parameters())
    scale = config.backbone_lr_scale
    if scale == 0.0:
        model.backbone.requires_grad_(False)
        return heads, list(heads)
    if scale == 1.0:
        return backbone + heads, backbone + heads
    groups = [{"params": backbone, "lr": config.lr * scale}, {"params": heads}]
    return backbone + heads, groups


@dataclass(frozen=True)
class _BackboneAnchor:
    """w*'s backbone and the pull toward it: ``prox · (w_b − w*_b)`` added to each gradient."""

    params: list[torch.nn.Parameter]
    start: list[torch.Tensor]
    prox: float

    @classmethod
    def of(cls, model: PersonalModel, config: Stage2Config) -> _BackboneAnchor | None:
        """The anchor at the model's current (w*) backbone; None without a pull or when frozen."""
        if config.prox == 0.0 or config.backbone_lr_scale == 0.0:
            return None
        params = list(model.backbone.parameters())
        return cls(params, [p.detach().clone() for p in params], config.prox)

    def pull(self) -> None:
        """Add ``prox · (w_b − w*_b)`` to every backbone gradient."""
        with torch.no_grad():
            for p, p0 in zip(self.params, self.start, strict=True):
                if p.grad is not None:
                    p.grad.add_(p - p0, alpha=self.prox)


def _train_epoch(
    model: PersonalModel,
    params: list[torch.nn.Parameter],
    opt: torch.optim.Optimizer,
    losses: Mapping[str, ObjectiveLoss],
    client: ClientData,
    config: Stage2Config,
    rng: np.random.Generator,
    trace: _Trace,
    anchor: _BackboneAnchor | None,
) -> None:
    """One pass of min-norm descent over the client's training rows; stops early on ε."""
    model.train()
    if config.backbone_lr_scale == 0.0:
        model.backbone.eval()  # frozen: w*'s BatchNorm statistics, no backbone dropout
    xc, xu, y = _tensors(client.train)
    groups = loss_groups(losses, client.train)
    n = client.train.n
    # μ* and the loss are averaged over the pass's nominal batch count, skipped batches included.
    n_batches = max(1, n // batch_rows(n, config.batch_size))
    epoch_mu = dict.fromkeys(client.objectives, 0.0)
    epoch_loss = 0.0
    for rows in epoch_batches(n, config.batch_size, rng):
        idx = torch.from_numpy(rows)
        parts = objective_losses(
            model,
            losses,
            client.objectives,
            xc[idx],
            xu[idx],
            y[idx],
            take_groups(groups, idx),
        )
        if not parts:
            continue
        mu, sq = _descend(parts, params, config.solver)
        if anchor is not None:
            anchor.pull()
        opt.step()
        trace.steps += 1
        epoch_loss += float(sum(float(v.detach()) for v in parts.values()))
        for s, w in zip(parts, mu, strict=True):
            epoch_mu[s] += float(w) / n_batches
            trace.mu_sum[s] += float(w)
        if sq <= config.epsilon:
            trace.stopped = "epsilon"
            break
    trace.mu_trace.append(epoch_mu)
    trace.train_loss.append(epoch_loss / n_batches)
