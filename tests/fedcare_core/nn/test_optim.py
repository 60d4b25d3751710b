"""The multi-tensor local optimisers give exactly the per-tensor loop's parameters."""

from __future__ import annotations

import copy

import pytest
import torch

from fedcare_core.config import ModelConfig
from fedcare_core.nn.models import MultiObjectiveModel
from fedcare_core.nn.optim import local_optimizer


def _trajectory(model: torch.nn.Module, opt: torch.optim.Optimizer, steps: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(7)
    params = list(model.parameters())
    out = []
    for _ in range(steps):
        for p in params:
            # gradients of very different scales, some exactly zero, as real heads produce
            p.grad = torch.randn(p.shape, generator=gen) * 10 ** float(
                torch.randint(-6, 2, (1,), generator=gen)
            )
            p.grad[..., :1] = 0.0
        opt.step()
        out.append(torch.cat([p.detach().reshape(-1) for p in params]))
    return torch.stack(out)


@pytest.mark.parametrize("name", ["adam", "sgd"])
def test_multi_tensor_steps_equal_the_per_tensor_loop_bit_for_bit(name):
    torch.manual_seed(0)
    model = MultiObjectiveModel(23, ["a", "b", "los"], ModelConfig())
    reference = copy.deepcopy(model)
    loop_cls = torch.optim.Adam if name == "adam" else torch.optim.SGD
    loop = loop_cls(reference.parameters(), lr=1e-3, weight_decay=1e-5, foreach=False)
    fast = local_optimizer(model.parameters(), name, lr=1e-3, weight_decay=1e-5)

    expected = _trajectory(reference, loop, 60)
    got = _trajectory(model, fast, 60)

    assert not torch.equal(got[0], got[-1])  # the parameters did move
    assert torch.equal(got, expected)


def test_an_unknown_optimizer_is_refused_by_name():
    with pytest.raises(ValueError, match="'lbfgs'"):
        local_optimizer([torch.nn.Parameter(torch.zeros(2))], "lbfgs", lr=0.1, weight_decay=0.0)
