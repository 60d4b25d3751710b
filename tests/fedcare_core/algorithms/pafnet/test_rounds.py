import dataclasses

import numpy as np
import torch

from fedcare_core.algorithms.fedavg.rounds import LocalUpdate
from fedcare_core.algorithms.pafnet.model import PafnetClientModel, own_features
from fedcare_core.algorithms.pafnet.rounds import (
    attentive_aggregate,
    build_client_models,
    pafnet_local_train,
    peer_attention,
)
from fedcare_core.config import ModelConfig
from fedcare_core.config.method_options import baselines
from fedcare_core.nn.param_vectors import ParamLayout, get_buffers, get_params

OBJECTIVES = ("a", "b")


def _model(mask_init=0.0):
    torch.manual_seed(0)
    return PafnetClientModel(7, OBJECTIVES, ("a",), ModelConfig(), latent=16, mask_init=mask_init)


def test_masks_cover_the_shared_weights_the_client_uses_and_are_trainable():
    m = _model()
    shared = dict(m.body.named_parameters())
    assert m.mask_names  # backbone and head-a weight matrices
    assert all(n.startswith("backbone.") or n.startswith("heads.a.") for n in m.mask_names)
    assert not any(n.startswith("heads.b.") for n in m.mask_names)
    for n, s in zip(m.mask_names, m.mask_scores, strict=True):
        assert s.shape == shared[n].shape and s.requires_grad
    x = torch.randn(8, 7)
    m.train()
    m(x, "a").sum().backward()
    assert all(s.grad is not None and s.grad.abs().sum() > 0 for s in m.mask_scores)


def test_masks_are_applied_and_start_at_the_identity():
    m = _model().eval()
    x = torch.randn(8, 7)
    with torch.no_grad():
        plain = m.body(m.projection(x), "a")
        torch.testing.assert_close(m(x, "a"), plain)  # mask 2·sigmoid(0) = 1
        m.mask_scores[0].fill_(-30.0)  # first layer's mask ≈ 0: the input is cut off
        cut = m(x, "a")
    assert not torch.allclose(cut, plain)
    torch.testing.assert_close(cut, cut[:1].expand_as(cut))  # same output for every row


def test_peer_attention_rows_sum_to_one_and_favour_similar_clients():
    deltas = np.array([[1.0, 0.0, 0.0], [0.9, 0.1, 0.0], [0.0, 0.0, 1.0], [0.0, 0.2, 0.9]])
    a = peer_attention(deltas, np.full(4, 100.0), temperature=0.2, self_weight=0.4)
    np.testing.assert_allclose(a.sum(axis=1), 1.0)
    np.testing.assert_allclose(np.diag(a), 0.4)
    assert (a > 0).all()
    assert a[0, 1] > a[0, 2] and a[0, 1] > a[0, 3]
    assert a[2, 3] > a[2, 0]
    # A large temperature gives the FedAvg (size) weights over the peers.
    flat = peer_attention(deltas, np.array([1.0, 1.0, 2.0, 4.0]), 1e9, self_weight=0.0)
    np.testing.assert_allclose(flat[0], [0, 1 / 7, 2 / 7, 4 / 7])
    np.testing.assert_allclose(peer_attention(deltas[:1], np.ones(1), 0.2), [[1.0]])


def test_attentive_aggregate_personalises_backbone_and_restricts_heads():
    layout = ParamLayout(total=4, backbone=slice(0, 2), heads={"a": slice(2, 3), "b": slice(3, 4)})
    ups = [
        LocalUpdate(
            0, np.array([1, 1, 10, 0], np.float32), np.zeros(1, np.float32), 1, {"a": 1}, {}
        ),
        LocalUpdate(
            1, np.array([3, 3, 0, 20], np.float32), np.ones(1, np.float32), 1, {"b": 1}, {}
        ),
    ]
    att = np.array([[0.75, 0.25], [0.5, 0.5]])
    prev = [np.zeros(4, np.float32)] * 2
    (p0, b0), (p1, b1) = attentive_aggregate(ups, att, layout, prev)
    np.testing.assert_allclose(p0[:2], 0.75 * 1 + 0.25 * 3)
    np.testing.assert_allclose(p1[:2], 2.0)
    # Head a comes from client 0 alone, head b from client 1 alone, for every client.
    np.testing.assert_allclose([p0[2], p1[2], p0[3], p1[3]], [10, 10, 20, 20])
    np.testing.assert_allclose([b0[0], b1[0]], [0.25, 0.5])


def test_local_round_trains_projection_masks_and_shared_weights(federation):
    cfg = baselines(batch_size=32, max_local_steps=3, pafnet_latent=16)
    models, w0, b0 = build_client_models(federation, ModelConfig(), cfg, seed=0)
    c = federation.clients[0]
    m = models[0]
    assert m.projection[0].in_features == own_features(c.train).shape[1]
    proj0 = m.projection[0].weight.detach().clone()
    kinds = {o.name: o.kind for o in federation.objectives}
    up = pafnet_local_train(m, w0, b0, c, kinds, cfg, seed=0, round_idx=1)
    assert not torch.equal(m.projection[0].weight, proj0)
    assert any(float((s.detach() - cfg.pafnet_mask_init).abs().max()) > 0 for s in m.mask_scores)
    assert not np.array_equal(up.params, w0)
    np.testing.assert_array_equal(up.params, get_params(m.body))
    np.testing.assert_array_equal(up.buffers, get_buffers(m.body))


def test_each_client_deploys_its_lowest_validation_loss_round(federation):
    from fedcare_core.algorithms.pafnet.rounds import run_pafnet
    from fedcare_core.algorithms.pafnet.selection import validation_loss

    kinds = {o.name: o.kind for o in federation.objectives}
    cfg = baselines(batch_size=32, max_local_steps=4, pafnet_latent=16, lr=1e-2)
    _, last, _ = run_pafnet(
        federation, ModelConfig(), dataclasses.replace(cfg, pafnet_deploy="last"), 4, 0
    )
    result, best, _ = run_pafnet(federation, ModelConfig(), cfg, 4, 0)
    assert "lowest validation loss after rounds" in result.notes[0]
    for b, la, c in zip(best, last, federation.clients, strict=True):
        assert validation_loss(b, c, kinds) <= validation_loss(la, c, kinds)


def test_best_validation_rounds_come_with_cross_fitted_validation_predictions(roomy):
    federation = roomy
    from fedcare_core.algorithms.pafnet.rounds import run_pafnet

    cfg = baselines(batch_size=32, max_local_steps=4, pafnet_latent=16, lr=1e-2)
    _, _, outputs = run_pafnet(federation, ModelConfig(), cfg, 3, 0)
    for out, c in zip(outputs, federation.clients, strict=True):
        assert set(out) == set(c.objectives)
        assert all(v.shape == (c.val.n,) and np.isfinite(v).all() for v in out.values())
    last = dataclasses.replace(cfg, pafnet_deploy="last")
    assert run_pafnet(federation, ModelConfig(), last, 2, 0)[2] == [{}] * len(federation.clients)
