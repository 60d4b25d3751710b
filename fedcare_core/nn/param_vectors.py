"""Flat views of a model's parameters and BatchNorm statistics.

Federated messages and the server's maths work on one flat float vector per model; the layout
records which slice belongs to the backbone and to each objective's head.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn


@dataclass(frozen=True)
class ParamLayout:
    """Where each block of parameters lies in the flat vector.

    Parameters
    ----------
    total
        Number of parameters.
    backbone
        Slice of the backbone's parameters.
    heads
        Objective → slice of its head's parameters.
    variances
        Where the BatchNorm running variances lie in :func:`get_buffers`'s vector.
    """

    total: int
    backbone: slice
    heads: dict[str, slice]
    variances: tuple[slice, ...] = ()


def param_layout(model: nn.Module) -> ParamLayout:
    """Layout of a model with ``backbone`` and ``heads`` (a ModuleDict) children."""
    pos = 0
    spans: dict[str, list[int]] = {}
    for name, p in model.named_parameters():
        block = name.split(".")[0] if not name.startswith("heads.") else name.split(".")[1]
        key = "__backbone__" if block == "backbone" else block
        start = spans.get(key, [pos, pos])[0]
        spans[key] = [min(start, pos), pos + p.numel()]
        pos += p.numel()
    bb = spans.pop("__backbone__")
    return ParamLayout(
        total=pos,
        backbone=slice(bb[0], bb[1]),
        heads={k: slice(v[0], v[1]) for k, v in spans.items()},
        variances=_variance_slices(model),
    )


def _variance_slices(model: nn.Module) -> tuple[slice, ...]:
    out: list[slice] = []
    pos = 0
    for name, b in model.named_buffers():
        if name.endswith("num_batches_tracked"):
            continue
        if name.endswith("running_var"):
            out.append(slice(pos, pos + b.numel()))
        pos += b.numel()
    return tuple(out)


def get_params(model: nn.Module) -> np.ndarray:
    """All parameters as one float32 vector."""
    return torch.nn.utils.parameters_to_vector(model.parameters()).detach().numpy().copy()


def set_params(model: nn.Module, flat: np.ndarray) -> None:
    """Load a flat float vector into the model's parameters."""
    # torch.tensor copies: vector_to_parameters makes the parameters views of this tensor, and
    # in-place optimiser steps must never write into the caller's array (the broadcast w^t).
    torch.nn.utils.vector_to_parameters(
        torch.tensor(np.asarray(flat, dtype=np.float32)), model.parameters()
    )


def _stat_buffers(model: nn.Module) -> list[torch.Tensor]:
    return [b for n, b in model.named_buffers() if not n.endswith("num_batches_tracked")]


def get_buffers(model: nn.Module) -> np.ndarray:
    """BatchNorm running means and variances as one float32 vector."""
    bufs = _stat_buffers(model)
    if not bufs:
        return np.zeros(0, dtype=np.float32)
    return torch.cat([b.reshape(-1) for b in bufs]).detach().numpy().copy()


def set_buffers(model: nn.Module, flat: np.ndarray) -> None:
    """Load BatchNorm running statistics from a flat vector."""
    pos = 0
    for b in _stat_buffers(model):
        n = b.numel()
        b.copy_(torch.as_tensor(np.asarray(flat[pos : pos + n], dtype=np.float32)).view_as(b))
        pos += n


def squared_norm(vector: np.ndarray) -> float:
    """``‖v‖²`` in float64, the same in every process.

    ``v @ v`` goes to BLAS, whose reduction order depends on how many threads it runs (a
    Flower ServerApp runs with one, a test process may run with two), so the last digits could
    differ between an in-process and a federated run. NumPy's pairwise sum does not thread.
    """
    return float(np.sum(np.square(vector, dtype=np.float64)))
