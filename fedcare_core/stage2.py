"""Stage 2 (paper Algorithm 2): per-client personalised fine-tuning, with no communication.

Each client builds φ_k from the converged backbone w* and a personal head per objective that
reads ``[h(x_c), x_u]``, then descends along ``Σ_s μ*_s g_s`` with μ* the local min-norm weights
(eq. 14) until ``‖Σ μ* g‖² ≤ ε_k`` or its budget is spent.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch

from fedcare_core.config import ModelConfig, Stage2Config
from fedcare_core.data.federation import ClientData, SplitArrays
from fedcare_core.losses import ObjectiveLoss, make_loss
from fedcare_core.models import PersonalModel
from fedcare_core.moo import min_norm_weights
from fedcare_core.optim import local_optimizer
from fedcare_core.seeding import derive_rng, seed_torch

#: BatchNorm needs at least two rows in training mode.
MIN_BATCH = 2


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
) -> dict[str, torch.Tensor]:
    """Mean loss of each objective over the rows labelled for it (others skipped)."""
    out: dict[str, torch.Tensor] = {}
    h = model.backbone(xc)
    z = torch.cat([h, xu], dim=1)
    for j, s in enumerate(objectives):
        mask = torch.isfinite(y[:, j])
        if int(mask.sum()) == 0:
            continue
        out[s] = losses[s](model.heads[s](z[mask]), y[mask, j])
    return out


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
        parts = objective_losses(model, losses, client.objectives, xc, xu, y)
    return float(sum(float(v) for v in parts.values()))


def fine_tune(
    backbone_state: Mapping[str, torch.Tensor],
    client: ClientData,
    kinds: Mapping[str, str],
    model_config: ModelConfig,
    config: Stage2Config,
    seed: int,
) -> Stage2Result:
    """Personalise the backbone at one client (Algorithm 2).

    Parameters
    ----------
    backbone_state
        State dict of the converged Stage 1 backbone w*.
    client
        The client's data (common and private features).
    kinds
        Objective name → ``"binary"`` or ``"regression"``.
    model_config, config
        Architecture and Stage 2 hyper-parameters.
    seed
        Experiment seed; the client's streams are keyed by its id.

    Returns
    -------
    Stage2Result
        φ_k* and its μ* and loss traces.
    """
    model = build_personal_model(backbone_state, client, model_config, seed)
    losses = {s: make_loss(kinds[s], client.train.y[:, j]) for j, s in enumerate(client.objectives)}
    params = [p for p in model.parameters()]
    opt = local_optimizer(params, config.optimizer, lr=config.lr, weight_decay=config.weight_decay)
    xc, xu, y = _tensors(client.train)
    n = client.train.n
    batch = max(MIN_BATCH, min(config.batch_size, n))
    rng = derive_rng(seed, "stage2-batch", client.client_id)
    seed_torch(seed, "stage2-dropout", client.client_id)
    best_val = float("inf")
    best_state = copy.deepcopy(model.state_dict())
    best_epoch, since_best, steps, stopped = 0, 0, 0, "budget"
    mu_trace: list[dict[str, float]] = []
    train_trace: list[float] = []
    val_trace: list[float] = []
    mu_sum = dict.fromkeys(client.objectives, 0.0)
    for epoch in range(1, config.epochs + 1):
        model.train()
        order = rng.permutation(n)
        n_batches = max(1, n // batch)
        epoch_mu = dict.fromkeys(client.objectives, 0.0)
        epoch_loss = 0.0
        for b in range(n_batches):
            idx = torch.from_numpy(order[b * batch : (b + 1) * batch])
            if len(idx) < MIN_BATCH:
                continue
            parts = objective_losses(model, losses, client.objectives, xc[idx], xu[idx], y[idx])
            if not parts:
                continue
            names = list(parts)
            if len(names) == 1:
                mu = np.ones(1)
                opt.zero_grad(set_to_none=True)
                parts[names[0]].backward()
                sq = sum(float((p.grad**2).sum()) for p in params if p.grad is not None)
            else:
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
                mu, sq = min_norm_weights((mat @ mat.T).numpy(), method=config.solver)
                direction = (torch.from_numpy(mu) @ mat).float()
                pos = 0
                for p in params:
                    k = p.numel()
                    p.grad = direction[pos : pos + k].view_as(p).clone()
                    pos += k
            opt.step()
            steps += 1
            epoch_loss += float(sum(float(v.detach()) for v in parts.values()))
            for s, w in zip(names, mu, strict=True):
                epoch_mu[s] += float(w) / n_batches
                mu_sum[s] += float(w)
            if sq <= config.epsilon:
                stopped = "epsilon"
                break
        mu_trace.append(epoch_mu)
        train_trace.append(epoch_loss / n_batches)
        val = _val_loss(model, losses, client, client.val)
        val_trace.append(val)
        if epoch == 1 or not np.isfinite(val) or val < best_val:
            best_val, best_epoch, since_best = val, epoch, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            since_best += 1
        if stopped == "epsilon":
            break
        if since_best >= config.patience:
            stopped = "patience"
            break
    model.load_state_dict(best_state)
    model.eval()
    return Stage2Result(
        client_id=client.client_id,
        model=model,
        mu_mean={s: v / max(steps, 1) for s, v in mu_sum.items()},
        mu_trace=mu_trace,
        train_loss=train_trace,
        val_loss=val_trace,
        steps=steps,
        best_epoch=best_epoch,
        stopped=stopped,
    )
