import numpy as np
import pytest
import torch

from fedcare_core.config import DataConfig, ModelConfig, Stage1Config
from fedcare_core.config.seeds import derive_rng
from fedcare_core.data.clients import build_federation
from fedcare_core.errors import TrainingDivergedError
from fedcare_core.nn.param_vectors import ParamLayout, get_buffers, get_params, param_layout
from fedcare_core.stage1.loop import (
    ClientUpdate,
    ObjectiveUpdate,
    ServerState,
    aggregate_objectives,
    build_model,
    client_losses,
    client_update,
    run_stage1,
    server_step,
)
from tests.fedcare_core.synthetic import PARTITION, make_cohort

KINDS = {"early_discharge": "binary", "readmission": "binary", "los": "regression"}


@pytest.fixture(scope="module")
def fed():
    return build_federation(make_cohort(240), PARTITION, DataConfig(clients=3), seed=0)


def _update(cid, deltas, n):
    return ClientUpdate(
        client_id=cid,
        objectives={
            s: ObjectiveUpdate(np.asarray(d, np.float32), n, 1.0) for s, d in deltas.items()
        },
        buffers=np.zeros(0, np.float32),
        num_examples=n,
    )


def test_aggregation_weights_by_labelled_rows():
    u1 = _update(0, {"a": [1.0, 0.0]}, 100)
    u2 = _update(1, {"a": [0.0, 1.0], "b": [2.0, 2.0]}, 300)
    deltas, _ = aggregate_objectives([u1, u2], ["a", "b"])
    np.testing.assert_allclose(deltas["a"], [0.25, 0.75])
    np.testing.assert_allclose(deltas["b"], [2.0, 2.0])


def test_server_step_orthogonal_objectives_closed_form():
    layout = ParamLayout(total=2, backbone=slice(0, 2), heads={"a": slice(2, 2), "b": slice(2, 2)})
    state = ServerState(np.zeros(2, np.float32), np.zeros(0, np.float32))
    u = _update(0, {"a": [1.0, 0.0], "b": [0.0, 2.0]}, 10)
    cfg = Stage1Config(global_lr=0.5)
    new, info = server_step(state, [u], ["a", "b"], layout, cfg, 1)
    # min ‖λ a + (1-λ) b‖² with ‖a‖=1, ‖b‖=2, a⊥b → λ = 0.8
    assert info.lambdas["a"] == pytest.approx(0.8)
    assert info.lambdas["b"] == pytest.approx(0.2)
    assert info.d_sq_norm == pytest.approx(0.8)
    np.testing.assert_allclose(new.params, -0.5 * np.array([0.8, 0.4]), rtol=1e-6)


def test_l2_normalisation_equalises_weights():
    layout = ParamLayout(total=2, backbone=slice(0, 2), heads={"a": slice(2, 2), "b": slice(2, 2)})
    state = ServerState(np.zeros(2, np.float32), np.zeros(0, np.float32))
    u = _update(0, {"a": [1.0, 0.0], "b": [0.0, 10.0]}, 10)
    _, info = server_step(state, [u], ["a", "b"], layout, Stage1Config(normalise="l2"), 1)
    assert info.lambdas["a"] == pytest.approx(0.5)


@pytest.mark.parametrize("scope", ["full", "backbone"])
def test_a_non_finite_aggregate_is_refused_naming_the_round_and_objective(scope):
    # With qp_scope=backbone a NaN in a head never reaches the Gram matrix; it is caught too.
    layout = ParamLayout(total=3, backbone=slice(0, 2), heads={"a": slice(2, 3), "b": slice(3, 3)})
    state = ServerState(np.zeros(3, np.float32), np.zeros(0, np.float32))
    u = _update(0, {"a": [1.0, 0.0, np.inf], "b": [0.0, 2.0, 0.0]}, 10)
    cfg = Stage1Config(qp_scope=scope)
    with pytest.raises(TrainingDivergedError, match=r"round 4: the aggregated update of a is"):
        server_step(state, [u], ["a", "b"], layout, cfg, 4)


def test_missing_objective_is_reported_and_its_head_untouched(fed):
    model = build_model(fed.common_width, fed.objective_names, ModelConfig(), seed=0)
    layout = param_layout(model)
    state = ServerState(get_params(model), get_buffers(model))
    cfg = Stage1Config(local_steps=2, batch_size=32)
    only = [c for c in fed.clients if c.objectives == ("los",)] or [fed.clients[0]]
    ups = [
        client_update(model, state.params, state.buffers, c, KINDS, cfg, seed=0, round_idx=1)
        for c in only
    ]
    new, info = server_step(state, ups, fed.objective_names, layout, cfg, 1)
    for s in info.missing_objectives:
        sl = layout.heads[s]
        np.testing.assert_array_equal(new.params[sl], state.params[sl])
    assert set(info.lambdas) | set(info.missing_objectives) == set(fed.objective_names)


def test_client_update_single_step_is_the_gradient(fed):
    client = fed.clients[0]
    s = client.objectives[0]
    model = build_model(
        fed.common_width, fed.objective_names, ModelConfig(dropout=0.0, head_dropout=0.0), seed=0
    )
    params, bufs = get_params(model), get_buffers(model)
    cfg = Stage1Config(local_steps=1, batch_size=10_000)
    up = client_update(model, params, bufs, client, KINDS, cfg, seed=0, round_idx=1)
    # Recompute the full-batch gradient independently.
    ref = build_model(
        fed.common_width, fed.objective_names, ModelConfig(dropout=0.0, head_dropout=0.0), seed=0
    )
    ref.train()
    j = client.objectives.index(s)
    mask = np.isfinite(client.train.y[:, j])
    loss_fn = client_losses(client, KINDS)[s]
    x = torch.from_numpy(client.train.x_common[mask])
    y = torch.from_numpy(client.train.y[mask, j])
    loss = loss_fn(ref(x, s), y)
    grads = torch.autograd.grad(loss, list(ref.parameters()), allow_unused=True)
    flat = torch.cat(
        [
            (g if g is not None else torch.zeros_like(p)).reshape(-1)
            for g, p in zip(grads, ref.parameters(), strict=True)
        ]
    )
    # Row order differs (a permutation), so compare to float tolerance.
    np.testing.assert_allclose(up.objectives[s].delta, flat.numpy(), atol=2e-5)
    layout = param_layout(model)
    for other, sl in layout.heads.items():
        if other != s:
            assert not up.objectives[s].delta[sl].any()


def test_client_update_equals_a_plain_per_tensor_sgd_loop_bit_for_bit(fed):
    """τ steps of p ← p − η_l·g with Δ = Σ g, written the obvious way, give the same bits."""
    client = fed.clients[1]
    s = client.objectives[0]
    j = client.objectives.index(s)
    mcfg = ModelConfig(dropout=0.0, head_dropout=0.0)
    model = build_model(fed.common_width, fed.objective_names, mcfg, seed=3)
    params, bufs = get_params(model), get_buffers(model)
    cfg = Stage1Config(local_steps=4, batch_size=16, local_lr=0.05)
    up = client_update(model, params, bufs, client, KINDS, cfg, seed=0, round_idx=2)

    ref = build_model(fed.common_width, fed.objective_names, mcfg, seed=3).train()
    labelled = np.flatnonzero(np.isfinite(client.train.y[:, j]))
    order = labelled[
        derive_rng(0, "stage1-batch", 2, client.client_id, s).permutation(len(labelled))
    ]
    loss_fn = client_losses(client, KINDS)[s]
    x, y = torch.from_numpy(client.train.x_common), torch.from_numpy(client.train.y[:, j])
    stepped = [
        p
        for n, p in ref.named_parameters()
        if not n.startswith("heads.") or n.startswith(f"heads.{s}.")
    ]
    sums = [torch.zeros_like(p) for p in stepped]
    for step in range(cfg.local_steps):
        idx = torch.from_numpy(np.take(order, np.arange(step * 16, step * 16 + 16), mode="wrap"))
        grads = torch.autograd.grad(loss_fn(ref(x[idx], s), y[idx]), stepped)
        with torch.no_grad():
            for p, g, acc in zip(stepped, grads, sums, strict=True):
                acc += g
                p.sub_(cfg.local_lr * g)

    sum_of = {id(p): acc for p, acc in zip(stepped, sums, strict=True)}
    expected = torch.cat(
        [sum_of.get(id(p), torch.zeros_like(p)).reshape(-1) for p in ref.parameters()]
    ).numpy()
    assert np.abs(expected).sum() > 0
    np.testing.assert_array_equal(up.objectives[s].delta, expected)


def test_run_stage1_is_deterministic_and_records_lambda(fed):
    cfg = Stage1Config(rounds=3, batch_size=32)
    a = run_stage1(fed, ModelConfig(), cfg, seed=4)
    b = run_stage1(fed, ModelConfig(), cfg, seed=4)
    assert [r.lambdas for r in a.rounds] == [r.lambdas for r in b.rounds]
    np.testing.assert_array_equal(a.params, b.params)
    for r in a.rounds:
        assert sum(r.lambdas.values()) == pytest.approx(1.0)
        assert r.participants == (0, 1, 2)
    c = run_stage1(fed, ModelConfig(), cfg, seed=5)
    assert not np.array_equal(a.params, c.params)


def test_backbone_scope_moves_each_head_along_its_own_delta(fed):
    model = build_model(fed.common_width, fed.objective_names, ModelConfig(), seed=0)
    layout = param_layout(model)
    state = ServerState(get_params(model), get_buffers(model))
    cfg = Stage1Config(local_steps=1, batch_size=32, qp_scope="backbone", global_lr=1.0)
    ups = [
        client_update(model, state.params, state.buffers, c, KINDS, cfg, seed=0, round_idx=1)
        for c in fed.clients
    ]
    deltas, _ = aggregate_objectives(ups, fed.objective_names)
    new, _ = server_step(state, ups, fed.objective_names, layout, cfg, 1)
    for s, sl in layout.heads.items():
        np.testing.assert_allclose(new.params[sl], state.params[sl] - deltas[s][sl], atol=1e-5)


def test_server_adam_option_changes_the_step(fed):
    sgd = run_stage1(fed, ModelConfig(), Stage1Config(rounds=2, batch_size=32), seed=0)
    adam = run_stage1(
        fed, ModelConfig(), Stage1Config(rounds=2, batch_size=32, server_optimizer="adam"), seed=0
    )
    assert not np.allclose(sgd.params, adam.params)
