"""Pieces the baselines share: model construction, local losses, optimisers and batches."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
import torch
from torch import nn

from fedcare_core.config import BaselineConfig, ModelConfig
from fedcare_core.data.clients import SplitArrays
from fedcare_core.nn.models import FullMLP, MultiObjectiveModel
from fedcare_core.nn.optim import local_optimizer
from fedcare_core.nn.seeding import seed_torch
from fedcare_core.nn.training import GroupCodes, masked_objective_losses
from fedcare_core.objectives.losses import ObjectiveLoss


def build_full_mlp(
    in_dim: int, objectives: Sequence[str], config: ModelConfig, seed: int, *key: object
) -> FullMLP:
    """A FullMLP initialised from the random stream ``(seed, "baseline-init", *key)``."""
    seed_torch(seed, "baseline-init", *key)
    return FullMLP(in_dim, objectives, config)


def trained_parameters(model: MultiObjectiveModel, objectives: Iterable[str]) -> list[nn.Parameter]:
    """The parameters a client's loss reaches: the backbone and the heads of its objectives."""
    wanted = set(objectives)
    return [
        p
        for n, p in model.named_parameters()
        if n.startswith("backbone.") or n.split(".")[1] in wanted
    ]


def multi_objective_loss(
    model: MultiObjectiveModel,
    losses: Mapping[str, ObjectiveLoss],
    objectives: Sequence[str],
    x: torch.Tensor,
    y: torch.Tensor,
    groups: GroupCodes | None = None,
) -> dict[str, torch.Tensor]:
    """Mean loss of each objective over the rows of ``x`` labelled for it (others skipped).

    ``y`` holds one column per entry of ``objectives``; NaN marks an unlabelled row.
    ``groups``: the rows' subgroup codes for a fairness preference's loss.
    """
    h = model.backbone(x)
    return masked_objective_losses(
        objectives, y, losses, lambda s, mask: model.heads[s](h[mask]), groups
    )


def make_optimizer(params: Sequence[nn.Parameter], config: BaselineConfig) -> torch.optim.Optimizer:
    """The local optimiser of :class:`BaselineConfig` (fresh state)."""
    return local_optimizer(params, config.optimizer, lr=config.lr, weight_decay=config.weight_decay)


def train_on_batches(
    opt: torch.optim.Optimizer,
    batches: Iterable[np.ndarray],
    objectives: Sequence[str],
    objective_losses: Callable[[torch.Tensor], dict[str, torch.Tensor]],
    regulariser: Callable[[], torch.Tensor] | None = None,
) -> dict[str, float]:
    """One optimiser step per mini-batch on the sum of its objectives' losses.

    Parameters
    ----------
    opt
        The local optimiser.
    batches
        Row indices of each mini-batch (:func:`fedcare_core.nn.training.batch_schedule`).
    objectives
        The client's objectives (the order of the returned means).
    objective_losses
        Rows → the loss of each objective labelled among them (a batch with none is skipped).
    regulariser
        A term added to every batch's loss (FedProx's proximal term), or None.

    Returns
    -------
    dict
        Mean batch loss of each objective that had a labelled batch.
    """
    sums = dict.fromkeys(objectives, 0.0)
    counts = dict.fromkeys(objectives, 0)
    for idx in batches:
        parts = objective_losses(torch.from_numpy(idx))
        if not parts:
            continue
        loss = torch.stack(list(parts.values())).sum()
        if regulariser is not None:
            loss = loss + regulariser()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        for s, v in parts.items():
            sums[s] += float(v.detach())
            counts[s] += 1
    return {s: sums[s] / counts[s] for s in objectives if counts[s]}


def split_tensors(split: SplitArrays) -> tuple[torch.Tensor, torch.Tensor]:
    """``(x_common, y)`` of a split as tensors (on a union view, ``x_common`` is the union)."""
    return torch.from_numpy(split.x_common), torch.from_numpy(split.y)
