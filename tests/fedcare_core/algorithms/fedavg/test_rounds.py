import dataclasses
import itertools
import math
from typing import Any

import numpy as np
import pytest
import torch

from fedcare_core.algorithms.fedavg.rounds import (
    LocalUpdate,
    aggregate_models,
    local_train,
    proximal_term,
    run_fedavg,
    server_round,
)
from fedcare_core.algorithms.union.common import build_full_mlp
from fedcare_core.config import ModelConfig, Stage1Config
from fedcare_core.config.method_options import baselines
from fedcare_core.nn.param_vectors import ParamLayout, get_buffers, get_params, param_layout
from fedcare_core.privacy.accountants import epsilon_spent
from fedcare_core.privacy.mechanism import DpSettings, noise_stream
from fedcare_core.stage1.privacy_rounds import VARIANCE_FLOOR, RoundNoise

QUICK = baselines(batch_size=32, max_local_steps=3)


def test_proximal_term_adds_mu_times_distance_to_the_gradient():
    torch.manual_seed(0)
    w = [torch.randn(3, 2, requires_grad=True), torch.randn(4, requires_grad=True)]
    anchors = [torch.randn(3, 2), torch.randn(4)]
    x = torch.randn(5, 2)

    def task_loss():
        return (x @ w[0].T).pow(2).mean() + w[1].sum()

    mu = 0.3
    g_task = torch.autograd.grad(task_loss(), w)
    g_prox = torch.autograd.grad(task_loss() + proximal_term(w, anchors, mu), w)
    for gt, gp, p, a in zip(g_task, g_prox, w, anchors, strict=True):
        torch.testing.assert_close(gp - gt, mu * (p.detach() - a))
    assert float(proximal_term(anchors, anchors, mu)) == 0.0


def test_fedavg_backbone_is_the_size_weighted_average_and_heads_average_their_clients():
    layout = ParamLayout(total=6, backbone=slice(0, 2), heads={"a": slice(2, 4), "b": slice(4, 6)})
    w_t = np.zeros(6, dtype=np.float32)
    ups = [
        LocalUpdate(
            0, np.array([1, 1, 2, 2, 0, 0], np.float32), np.ones(1, np.float32), 100, {"a": 90}, {}
        ),
        LocalUpdate(
            1,
            np.array([4, 4, 5, 5, 0, 0], np.float32),
            np.full(1, 4, np.float32),
            300,
            {"a": 10},
            {},
        ),
    ]
    params, bufs = aggregate_models(w_t, np.zeros(1, np.float32), ups, layout)
    np.testing.assert_allclose(params[:2], 0.25 * 1 + 0.75 * 4)  # N_k weights
    np.testing.assert_allclose(params[2:4], 0.9 * 2 + 0.1 * 5)  # N_{k,a} weights
    np.testing.assert_array_equal(params[4:], w_t[4:])  # nobody trained head b
    np.testing.assert_allclose(bufs, 0.25 * 1 + 0.75 * 4)


def test_local_training_moves_only_the_backbone_and_the_clients_heads(union):
    client = union.clients[0]
    kinds = {o.name: o.kind for o in union.objectives}
    model = build_full_mlp(union.common_width, union.objective_names, ModelConfig(), 0)
    layout = param_layout(model)
    w, b = get_params(model), get_buffers(model)
    w0 = w.copy()
    up = local_train(model, w, b, client, kinds, QUICK, prox_mu=0.0, seed=0, round_idx=1)
    np.testing.assert_array_equal(w, w0)  # the broadcast w^t is not written into
    assert not np.array_equal(up.params[layout.backbone], w0[layout.backbone])
    for s, sl in layout.heads.items():
        moved = not np.array_equal(up.params[sl], w0[sl])
        assert moved == (s in client.objectives)
    assert set(up.losses) == set(client.objectives)


def test_fedprox_with_mu_zero_is_fedavg_exactly_and_mu_pulls_towards_w_t(union):
    base = run_fedavg(union, ModelConfig(), QUICK, 2, seed=1)
    prox0 = run_fedavg(union, ModelConfig(), QUICK, 2, seed=1, prox_mu=0.0)
    np.testing.assert_array_equal(base.params, prox0.params)
    strong = run_fedavg(union, ModelConfig(), QUICK, 2, seed=1, prox_mu=100.0)
    moved = [r.d_sq_norm for r in base.rounds]
    held = [r.d_sq_norm for r in strong.rounds]
    assert all(h < m for h, m in zip(held, moved, strict=True))


# ---- client-level differential privacy ----------------------------------------------------

#: z = 1.1, C = 1 and seeded noise (reproducible), over the rounds of each test.
DP = {"dp_noise_multiplier": 1.1, "dp_noise_seed": 7}


def _privacy(rounds: int, **kw: Any) -> DpSettings:
    settings = Stage1Config(rounds=rounds, **(DP | kw)).privacy()
    assert settings is not None
    return settings


def _joint_norm(*vectors: np.ndarray) -> float:
    return math.sqrt(sum(float(np.sum(np.square(v, dtype=np.float64))) for v in vectors))


def test_a_private_local_update_is_the_jointly_clipped_change_without_counts_or_losses(union):
    client = max(union.clients, key=lambda c: len(c.objectives))
    kinds = {o.name: o.kind for o in union.objectives}
    model = build_full_mlp(union.common_width, union.objective_names, ModelConfig(), 0)
    w, b = get_params(model), get_buffers(model)
    args = (model, w, b, client, kinds, QUICK)
    plain = local_train(*args, prox_mu=0.0, seed=0, round_idx=1)
    clip = 0.05
    up = local_train(*args, prox_mu=0.0, seed=0, round_idx=1, dp_clip=clip)
    change, buffer_change = plain.params - w, plain.buffers - b
    assert _joint_norm(change, buffer_change) > clip  # so the clip binds
    assert _joint_norm(up.params, up.buffers) <= clip
    assert _joint_norm(up.params, up.buffers) == pytest.approx(clip, rel=1e-5)
    # One factor scales the model change and the statistics change alike.
    factor = clip / _joint_norm(change, buffer_change)
    np.testing.assert_allclose(up.params, factor * change, rtol=1e-4, atol=1e-9)
    np.testing.assert_allclose(up.buffers, factor * buffer_change, rtol=1e-4, atol=1e-9)
    assert up.num_examples == 0 and up.losses == {}
    assert up.objective_examples == dict.fromkeys(client.objectives, 0)
    # A clip above the change's norm sends the change as it is.
    loose = local_train(*args, prox_mu=0.0, seed=0, round_idx=1, dp_clip=1e6)
    np.testing.assert_allclose(loose.params, change, rtol=1e-6, atol=1e-9)


def test_a_private_round_adds_noise_of_z_times_c_over_the_repliers_to_a_known_signal():
    # Five identical clients send the same change v (inside C): the aggregate step is v plus
    # the noise alone, N(0, (z·C)²) per coordinate of the sum over the m averaged clients.
    n, n_buf = 20_000, 4_000
    layout = ParamLayout(
        total=4 * n,
        backbone=slice(0, n),
        heads={"a": slice(n, 2 * n), "b": slice(2 * n, 3 * n), "c": slice(3 * n, 4 * n)},
        variances=(slice(n_buf // 2, n_buf),),
    )
    settings = _privacy(20, dp_clip=0.8, dp_noise_multiplier=None, dp_epsilon=3.0)
    rng = np.random.default_rng(0)
    v = rng.normal(size=4 * n).astype(np.float32)
    v[3 * n :] = 0.0  # nobody trains head c
    v *= 0.5 / np.linalg.norm(v)
    pursued = [{"a": 0, "b": 0}, {"a": 0, "b": 0}, {"a": 0}, {"a": 0}, {"a": 0}]
    ups = [
        LocalUpdate(k, v, np.zeros(n_buf, np.float32), 0, objs, {})
        for k, objs in enumerate(pursued)
    ]
    w_t = np.zeros(4 * n, np.float32)
    buffers = np.full(n_buf, 10.0, np.float32)  # variances far above the floor
    noise = RoundNoise(settings, noise_stream(1, 1))
    params, new_buffers, info = server_round(
        w_t, buffers, ups, layout, ("a", "b", "c"), 1, noise, releases=3
    )
    z_c = settings.noise_multiplier * 0.8
    for sl, m in ((layout.backbone, 5), (layout.heads["a"], 5), (layout.heads["b"], 2)):
        residual = params[sl].astype(np.float64) - v[sl]
        assert np.std(residual) == pytest.approx(z_c / m, rel=0.03)
        assert abs(np.mean(residual)) < 4 * z_c / m / math.sqrt(n)
    np.testing.assert_array_equal(params[layout.heads["c"]], w_t[layout.heads["c"]])
    assert np.std(new_buffers - buffers) == pytest.approx(z_c / 5, rel=0.05)
    assert info.losses == {} and info.lambdas == {} and info.participants == (0, 1, 2, 3, 4)
    assert info.epsilon == epsilon_spent(settings.noise_multiplier, 4, 1e-5)
    # The backbone's noise and the statistics' noise are independent draws.
    bb = params[layout.backbone][:n_buf].astype(np.float64) - v[:n_buf]
    assert abs(np.corrcoef(bb, new_buffers - buffers)[0, 1]) < 0.1


def test_a_private_round_keeps_the_running_variances_above_the_floor():
    layout = ParamLayout(total=4, backbone=slice(0, 4), heads={}, variances=(slice(2, 4),))
    change = np.full(4, -50.0, np.float32)  # far beyond the noise (z·C = 1.1)
    ups = [LocalUpdate(0, np.zeros(4, np.float32), change, 0, {}, {})]
    noise = RoundNoise(_privacy(1), noise_stream(0, 1))
    w, b = np.zeros(4, np.float32), np.ones(4, np.float32)
    _, buffers, _ = server_round(w, b, ups, layout, (), 1, noise)
    assert np.all(buffers[:2] < 0)  # running means are not floored
    np.testing.assert_array_equal(buffers[2:], np.float32(VARIANCE_FLOOR))


def test_a_private_fedavg_run_reports_the_accountants_epsilon_every_round(union):
    settings = _privacy(4)
    result = run_fedavg(union, ModelConfig(), QUICK, 4, seed=1, privacy=settings)
    eps = [r.epsilon for r in result.rounds]
    assert eps == [epsilon_spent(1.1, t, 1e-5) for t in range(1, 5)]
    assert all(b > a for a, b in itertools.pairwise(eps))
    assert all(r.losses == {} and r.participants == (0, 1, 2, 3) for r in result.rounds)
    assert np.all(np.isfinite(result.params))
    # Seeded noise is reproducible; the non-private run is another model.
    again = run_fedavg(union, ModelConfig(), QUICK, 4, seed=1, privacy=settings)
    np.testing.assert_array_equal(again.params, result.params)
    plain = run_fedavg(union, ModelConfig(), QUICK, 4, seed=1)
    assert not np.array_equal(plain.params, result.params)
    assert all(r.epsilon is None and r.losses for r in plain.rounds)


def test_fedprox_runs_privately_through_the_algorithm_registry(union):
    from fedcare_core.algorithms.base import RunInputs
    from fedcare_core.algorithms.fedavg.fedprox import FedProx
    from fedcare_core.config import ExperimentConfig

    config = ExperimentConfig(
        algorithm="fedprox",
        stage1=Stage1Config(rounds=2, **DP),
        baselines=dataclasses.replace(QUICK, prox_mu=0.1),
    )
    inputs = RunInputs(union, union, None, config)
    rounds = FedProx().in_process_rounds(inputs, None).rounds
    assert [r.epsilon for r in rounds] == [epsilon_spent(1.1, t, 1e-5) for t in (1, 2)]
    assert all(r.losses == {} for r in rounds)
