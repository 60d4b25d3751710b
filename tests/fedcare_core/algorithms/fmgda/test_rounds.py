import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from fedcare_core.algorithms.fmgda.rounds import mgda_config, run_mgda
from fedcare_core.config import ModelConfig, Stage1Config
from fedcare_core.nn.param_vectors import get_buffers, get_params, set_buffers, set_params
from fedcare_core.nn.training import client_losses
from fedcare_core.privacy.accountants import epsilon_spent
from fedcare_core.stage1.loop import build_model, client_update

#: No dropout, so one local step's Δ is a deterministic gradient.
NO_DROPOUT = ModelConfig(dropout=0.0, head_dropout=0.0)


def _gradient(model, params, buffers, client, kinds, rows):
    """The gradient of the client's objective loss over ``rows`` at ``params`` (train mode)."""
    set_params(model, params)
    set_buffers(model, buffers)
    model.train()
    s = client.objectives[0]
    loss = client_losses(client, kinds)[s]
    x = torch.from_numpy(client.train.x_common[rows])
    y = torch.from_numpy(client.train.y[rows, 0])
    model.zero_grad()
    loss(model(x, s), y).backward()
    return torch.cat(
        [
            (p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1)
            for p in model.parameters()
        ]
    ).numpy()


@pytest.fixture(scope="module")
def setting(union):
    client = next(c for c in union.clients if c.objectives == ("readmission",))
    kinds = {o.name: o.kind for o in union.objectives}
    model = build_model(union.common_width, union.objective_names, NO_DROPOUT, 0)
    return union, client, kinds, model, get_params(model), get_buffers(model)


def _delta(setting, config):
    _union, client, kinds, model, params, buffers = setting
    up = client_update(model, params, buffers, client, kinds, config, seed=0, round_idx=1)
    return up.objectives[client.objectives[0]].delta


def test_fmgda_uses_the_full_local_gradient(setting):
    union, client, kinds, model, params, buffers = setting
    cfg = mgda_config(Stage1Config(local_steps=1, batch_size=32), union, full=True)
    assert cfg.batch_size >= max(c.train.n for c in union.clients)
    labelled = np.flatnonzero(np.isfinite(client.train.y[:, 0]))
    full = _gradient(model, params, buffers, client, kinds, labelled)
    np.testing.assert_allclose(_delta(setting, cfg), full, rtol=1e-4, atol=1e-6)


def test_fsmgda_uses_a_mini_batch_gradient(setting):
    from fedcare_core.config.seeds import derive_rng

    union, client, kinds, model, params, buffers = setting
    cfg = mgda_config(Stage1Config(local_steps=1, batch_size=16), union, full=False)
    assert cfg.batch_size == 16
    labelled = np.flatnonzero(np.isfinite(client.train.y[:, 0]))
    # The batch client_update draws: the first 16 rows of its keyed permutation.
    order = labelled[
        derive_rng(0, "stage1-batch", 1, client.client_id, "readmission").permutation(len(labelled))
    ]
    batch = _gradient(model, params, buffers, client, kinds, order[:16])
    full = _gradient(model, params, buffers, client, kinds, labelled)
    delta = _delta(setting, cfg)
    np.testing.assert_allclose(delta, batch, rtol=1e-4, atol=1e-6)
    assert np.linalg.norm(delta - full) > 1e-3 * np.linalg.norm(full)


@pytest.mark.parametrize("full", [True, False], ids=["fmgda", "fsmgda"])
def test_fmgda_and_fsmgda_run_privately_and_record_epsilon_every_round(setting, full):
    union, client, kinds, model, params, buffers = setting
    config = Stage1Config(
        rounds=3, batch_size=16, dp_clip=0.01, dp_noise_multiplier=1.1, dp_noise_seed=7
    )
    cfg = mgda_config(config, union, full=full)
    assert cfg.privacy() == config.privacy()  # the DP fields pass through
    up = client_update(model, params, buffers, client, kinds, cfg, seed=0, round_idx=1)
    sent = [o.delta for o in up.objectives.values()] + [up.buffers]
    assert math.sqrt(sum(float(np.sum(np.square(v, dtype=np.float64))) for v in sent)) <= 0.01
    assert up.num_examples == 0 and all(o.num_examples == 0 for o in up.objectives.values())
    result = run_mgda(union, NO_DROPOUT, config, 0, full=full)
    assert [r.epsilon for r in result.rounds] == [epsilon_spent(1.1, t, 1e-5) for t in (1, 2, 3)]
    for r in result.rounds:
        assert r.losses == {} and sum(r.lambdas.values()) == pytest.approx(1.0)
    plain = run_mgda(union, NO_DROPOUT, replace(config, dp_noise_multiplier=None), 0, full=full)
    assert all(r.epsilon is None and r.losses for r in plain.rounds)
