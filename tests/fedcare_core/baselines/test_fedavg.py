import numpy as np
import torch

from fedcare_core.baselines.common import build_full_mlp
from fedcare_core.baselines.fedavg import (
    LocalUpdate,
    aggregate_models,
    local_train,
    proximal_term,
    run_fedavg,
)
from fedcare_core.config import BaselineConfig, ModelConfig
from fedcare_core.param_vectors import ParamLayout, get_buffers, get_params, param_layout

QUICK = BaselineConfig(batch_size=32, max_local_steps=3)


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
