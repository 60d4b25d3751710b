"""StreamDropout: rate, scaling, reseeding and evaluation mode."""

from __future__ import annotations

import pytest
import torch

from fedcare_core.nn.dropout import StreamDropout, keep_mask, keep_threshold, seed_masks
from fedcare_core.nn.seeding import seed_torch


def test_mask_keeps_about_one_minus_p_and_scales_kept_elements():
    seed_masks(7)
    mask = keep_mask((400, 500), 0.3)
    kept = mask > 0
    assert abs(float(kept.float().mean()) - 0.7) < 0.005
    assert torch.allclose(mask[kept], torch.full_like(mask[kept], 1 / 0.7))
    assert torch.all(mask[~kept] == 0)


def test_the_threshold_quantises_p_to_sixteen_bits():
    assert keep_threshold(0.3) == 45875
    assert keep_threshold(0.0) == 1 << 16


def test_seed_torch_reseeds_the_masks():
    drop = StreamDropout(0.3).train()
    x = torch.ones(64, 32)
    seed_torch(3, "stage1-dropout", 1, 0, "los")
    first = drop(x)
    seed_torch(3, "stage1-dropout", 1, 0, "los")
    assert torch.equal(drop(x), first)
    seed_torch(3, "stage1-dropout", 2, 0, "los")
    assert not torch.equal(drop(x), first)


def test_identity_in_eval_mode_and_gradients_follow_the_mask():
    drop = StreamDropout(0.5)
    x = torch.randn(16, 8, requires_grad=True)
    assert drop.eval()(x) is x
    seed_masks(1)
    out = drop.train()(x)
    out.sum().backward()
    assert x.grad is not None
    assert torch.equal(x.grad == 0, out.detach() == 0)


def test_p_outside_the_unit_interval_is_refused():
    with pytest.raises(ValueError, match="dropout probability"):
        StreamDropout(1.0)
