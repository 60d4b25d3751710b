"""The local optimisers (Adam, SGD) every method builds, in torch's multi-tensor form.

On the CPU, torch's ``Adam`` and ``SGD`` default to a Python loop over the parameter tensors
(``foreach=False``). The multi-tensor form (``foreach=True``) applies each update operation to
all tensors in one call and gives bit-identical parameters (``tests/fedcare_core/nn/test_optim.py``
checks this step by step), at about half the cost of an Adam step on this project's networks
(about 18 parameter tensors). The fused CPU kernel (``fused=True``) is faster still but rounds
differently (differences of order 1e-8), so results would no longer match earlier runs; it is not
used.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

from fedcare_core.config import LOCAL_OPTIMIZERS


def local_optimizer(
    params: Iterable[Any], name: str, *, lr: float, weight_decay: float
) -> torch.optim.Optimizer:
    """A fresh multi-tensor Adam or SGD over ``params``.

    Parameters
    ----------
    params
        The parameters it steps, or torch parameter groups (dicts with ``"params"``).
    name
        ``"adam"`` (Kingma & Ba defaults otherwise) or ``"sgd"`` (no momentum).
    lr, weight_decay
        Learning rate and L2 weight decay (added to the gradient, as torch does).

    Returns
    -------
    torch.optim.Optimizer
        The optimiser, with no state yet.

    Raises
    ------
    ValueError
        For any other ``name``.
    """
    if name == "adam":
        return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay, foreach=True)
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, weight_decay=weight_decay, foreach=True)
    raise ValueError(f"unknown optimizer {name!r}; expected one of {LOCAL_OPTIMIZERS}")
