"""Secure aggregation on Flower's SecAgg+ (in process, on a loopback grid): sums only, faults."""

from __future__ import annotations

import copy
import logging
from dataclasses import replace
from types import SimpleNamespace
from typing import ClassVar

import numpy as np
import pytest
from flwr.app import Message

from fedcare.flower.client_app import node_config_data_path
from fedcare.flower.flower_options import FlowerConfig
from fedcare.flower.results import read_stage1_result
from fedcare.flower.secagg import SecAggSettings
from fedcare.flower.secagg_client import build_secagg_client_app
from fedcare.flower.secagg_server import SecureRoundError, SecureStage1Strategy, run_secure_server
from fedcare.flower.workspace import prepare_workspace
from fedcare_core.stage1.loop import run_stage1
from tests.fedcare.flower.conftest import LoopbackGrid, node_context

#: λ* of a securely aggregated run against the plain one (the issue asks for 1e-3).
LAMBDA_TOL = 1e-6


class SecureGrid(LoopbackGrid):
    """The loopback grid with the blocking call SecAgg+ uses, recording every reply."""

    def __init__(self, apps, fail=lambda node, msg: None) -> None:
        super().__init__(apps, fail)
        self.received = []

    @property
    def run(self):
        return SimpleNamespace(run_id=7)

    def push_messages(self, messages):
        # A real transport gives each node its own copy (SecAgg+'s setup shares one content).
        copies = [
            Message(
                copy.deepcopy(m.content),
                m.metadata.dst_node_id,
                m.metadata.message_type,
                group_id=m.metadata.group_id,
            )
            for m in messages
        ]
        ids = list(super().push_messages(copies))
        for m, c in zip(messages, copies, strict=True):
            m.metadata.__dict__["_message_id"] = c.metadata.message_id
        return ids

    def pull_messages(self, message_ids):
        replies = list(super().pull_messages(message_ids))
        self.received.extend(replies)
        return replies


class RecordingStrategy(SecureStage1Strategy):
    """Records every argument aggregate_fit is given."""

    calls: ClassVar[list] = []

    def aggregate_fit(self, server_round, results, failures):
        out = super().aggregate_fit(server_round, results, failures)
        type(self).calls.append((server_round, list(results), list(failures), self.last_aggregate))
        return out


def _secure_setup(small_federation, tmp_path, fail=None, **stage1):
    cfg, fed = small_federation
    cfg = replace(cfg, stage1=replace(cfg.stage1, secagg=True, **stage1))
    ws = prepare_workspace(
        fed, cfg.model, cfg.stage1, cfg.seed, FlowerConfig(workdir_parent=str(tmp_path))
    )
    app = build_secagg_client_app(node_config_data_path)
    apps = {
        1000 + k: (app, node_context(1000 + k, {"data-path": str(ws.client_dir(k))}))
        for k in range(len(fed.clients))
    }
    plan = replace(ws.plan, round_timeout_s=1.0, startup_timeout_s=1.0)
    return cfg, fed, ws, plan, SecureGrid(apps, fail or (lambda node, msg: None))


def _run(grid, plan, monkeypatch, strategy_cls=SecureStage1Strategy):
    import fedcare.flower.secagg_server as server

    monkeypatch.setattr(server, "SecureStage1Strategy", strategy_cls)
    ctx = node_context(0, {})
    return run_secure_server(grid, ctx, plan)


def test_secure_rounds_match_the_in_process_run(small_federation, tmp_path, task_identity):
    cfg, fed, ws, plan, grid = _secure_setup(small_federation, tmp_path)
    plain = run_stage1(fed, cfg.model, replace(cfg.stage1, secagg=False), cfg.seed)
    strategy = run_secure_server(grid, node_context(0, {}), plan)
    result = read_stage1_result(ws.result_dir, ws.plan)
    assert len(result.rounds) == len(plain.rounds) == cfg.stage1.rounds
    for a, b in zip(plain.rounds, result.rounds, strict=True):
        assert a.lambdas.keys() == b.lambdas.keys()
        for s in a.lambdas:
            assert b.lambdas[s] == pytest.approx(a.lambdas[s], abs=LAMBDA_TOL)
        assert b.d_sq_norm == pytest.approx(a.d_sq_norm, rel=1e-5)
        assert b.participants == (0, 1, 2)
        for s in a.losses:
            assert b.losses[s] == pytest.approx(a.losses[s], rel=1e-6)
    np.testing.assert_allclose(result.params, plain.params, atol=1e-6)
    # The noise seed keys the server's noise: it never reaches a client.
    sent = [str(dict(rec)) for m in grid.sent for rec in m.content.config_records.values()]
    assert any('"dp_noise_seed": null' in t for t in sent)
    assert not any('"dp_noise_seed": 3' in t for t in sent)
    # ε per round (the Flower layer's round log does not carry it yet: the strategy's does).
    assert [r.epsilon for r in strategy.rounds] == pytest.approx([r.epsilon for r in plain.rounds])
    np.testing.assert_allclose(result.buffers, plain.buffers, atol=1e-5)
    assert strategy.notes == []
    # The range shrank to the data after round 1 (2^⌈log2(2·Σ_k max|x_k|)⌉).
    assert strategy.clip < 8.0


def test_server_code_never_holds_an_individual_update(
    small_federation, tmp_path, task_identity, monkeypatch
):
    *_, plan, grid = _secure_setup(small_federation, tmp_path)
    RecordingStrategy.calls = []
    strategy = _run(grid, plan, monkeypatch, RecordingStrategy)
    assert [c[0] for c in RecordingStrategy.calls] == [1, 2, 3]
    for _, results, failures, mean in RecordingStrategy.calls:
        assert failures == [] and len(results) == 3
        # One aggregate shared by every result: the same object, no per-client arrays …
        assert len({id(res.parameters) for _, res in results}) == 1
        (vector,) = [np.frombuffer(t, dtype=np.uint8) for t in results[0][1].parameters.tensors]
        assert vector.size > 0
        # … and nothing else from the client but its id and SecAgg+'s unit weight.
        assert all(res.metrics.keys() == {"client-id"} for _, res in results)
        assert all(res.num_examples == 1 for _, res in results)
        assert mean.shape == (strategy.sum_layout.size,)
    # What crossed the grid from the clients: config records only (keys, shares, masked
    # integers); every plain array was cleared by secaggplus_mod.
    for reply in grid.received:
        assert not reply.has_error()
        assert all(len(rec) == 0 for rec in reply.content.array_records.values())


def test_a_client_lost_within_the_threshold_is_left_out(small_federation, tmp_path, task_identity):
    # K=3, threshold 2: client 2 never answers round 2's masked-vector stage.
    def fail(node, msg):
        cfg = msg.content.config_records.get("secaggplus_configs")
        stage = None if cfg is None else cfg.get("stage")
        round_2 = msg.metadata.group_id == "2"
        return "silent" if node == 1002 and round_2 and stage == "collect_masked_vectors" else None

    cfg, fed, ws, plan, grid = _secure_setup(small_federation, tmp_path, fail)
    assert SecAggSettings.for_clients(3).threshold == 2
    strategy = run_secure_server(grid, node_context(0, {}), plan)
    result = read_stage1_result(ws.result_dir, ws.plan)
    assert [r.participants for r in result.rounds] == [(0, 1, 2), (0, 1), (0, 1, 2)]
    assert any("1 client(s) lost" in n for n in strategy.notes)
    # Round 2 equals the plain step over clients 0 and 1.
    from fedcare_core.nn.param_vectors import get_buffers, get_params, param_layout
    from fedcare_core.nn.training import objective_kinds
    from fedcare_core.stage1.loop import ServerState, build_model, client_update, server_step

    model = build_model(fed.common_width, fed.objective_names, cfg.model, cfg.seed)
    state = ServerState(get_params(model), get_buffers(model))
    for t, ids in ((1, (0, 1, 2)), (2, (0, 1))):
        ups = [
            client_update(
                model,
                state.params,
                state.buffers,
                fed.clients[k],
                objective_kinds(fed),
                cfg.stage1,
                seed=cfg.seed,
                round_idx=t,
            )
            for k in ids
        ]
        state, info = server_step(
            state, ups, fed.objective_names, param_layout(model), cfg.stage1, t
        )
    for s, lam in info.lambdas.items():
        assert result.rounds[1].lambdas[s] == pytest.approx(lam, abs=LAMBDA_TOL)


def test_a_round_below_the_threshold_fails_clearly(small_federation, tmp_path, task_identity):
    def fail(node, msg):
        cfg = msg.content.config_records.get("secaggplus_configs")
        stage = None if cfg is None else cfg.get("stage")
        return "silent" if node in (1001, 1002) and stage == "share_keys" else None

    _, _, ws, plan, grid = _secure_setup(small_federation, tmp_path, fail)
    with pytest.raises(SecureRoundError, match=r"round 1: secure aggregation failed: fewer than 2"):
        run_secure_server(grid, node_context(0, {}), plan)
    assert "SecureRoundError" in (ws.result_dir / "error.txt").read_text()


def test_too_few_clients_online_fail_before_any_secagg_stage(
    small_federation, tmp_path, task_identity
):
    # One of three clients ever answers the handshake: secure aggregation never sums one
    # client (the run's floor), nor fewer than a majority (2).
    from fedcare.flower.round_floor import TooFewSites

    _, _, ws, plan, grid = _secure_setup(small_federation, tmp_path)
    grid.apps = {1000: grid.apps[1000]}
    with pytest.raises(TooFewSites, match=r"start-up: 1 of the 2 clients needed joined"):
        run_secure_server(grid, node_context(0, {}), plan)
    assert "missing: client 1 (did not join)" in (ws.result_dir / "error.txt").read_text()
    assert not any(m.metadata.message_type == "train" for m in grid.sent)


def test_the_threshold_is_a_majority_of_the_clients_actually_asked(small_federation, tmp_path):
    # Three nodes passed the handshake; one left before the instructions went out.
    from fedcare.flower.secagg_server import SecureRoundWorkflow

    _, _, _, plan, _ = _secure_setup(small_federation, tmp_path)
    strategy = SecureStage1Strategy(plan)
    workflow = SecureRoundWorkflow(strategy, timeout=1.0)
    strategy.membership.clients.update({1000: 0, 1001: 1, 1002: 2})
    strategy._nodes = strategy.membership.nodes_by_client()
    strategy.settings = strategy.run_settings.for_round(3)

    def manager(*nodes):
        return SimpleNamespace(all=lambda: {str(n): SimpleNamespace(node_id=n) for n in nodes})

    fits = strategy.configure_fit(1, None, manager(1000, 1002))
    assert [proxy.node_id for proxy, _ in fits] == [1000, 1002]
    assert strategy.settings.num_clients == 2 and strategy.settings.tolerated_losses == 0
    assert workflow.reconstruction_threshold == 2
    assert strategy.settings.levels == strategy.run_settings.levels
    with pytest.raises(SecureRoundError, match=r"round 1: 1 client\(s\) left to ask"):
        strategy.configure_fit(1, None, manager(1001))


def test_values_outside_the_range_rerun_the_round_wider(
    small_federation, tmp_path, task_identity, monkeypatch, caplog
):
    import fedcare_core.stage1.secure_sums as sums

    monkeypatch.setattr(sums, "INITIAL_CLIP", 2.0**-12)
    cfg, fed, ws, plan, grid = _secure_setup(small_federation, tmp_path)
    plain = run_stage1(fed, cfg.model, replace(cfg.stage1, secagg=False), cfg.seed)
    with caplog.at_level(logging.DEBUG, logger="fedcare.flower.secagg_strategy"):
        strategy = run_secure_server(grid, node_context(0, {}), plan)
    # The widening is routine: said at DEBUG in words, neither a note nor a warning.
    assert strategy.ranges[0] > 2.0**-12
    assert not any("±" in n for n in strategy.notes)
    widened = [r for r in caplog.records if "too narrow" in r.getMessage()]
    assert widened and all(r.levelno == logging.DEBUG for r in widened)
    assert "no update is lost" in widened[0].getMessage()
    assert not [r for r in caplog.records if r.name.startswith("fedcare") and r.levelno >= 30]
    result = read_stage1_result(ws.result_dir, ws.plan)
    for a, b in zip(plain.rounds, result.rounds, strict=True):
        for s in a.lambdas:
            assert b.lambdas[s] == pytest.approx(a.lambdas[s], abs=LAMBDA_TOL)


def test_dp_noise_is_added_by_the_sites_so_the_server_holds_noised_sums_only(
    small_federation, tmp_path, task_identity
):
    from fedcare_core.stage1.secure_sums import initial_clip

    dp = {"dp_noise_multiplier": 1.0, "dp_clip": 1.0, "dp_noise_seed": 3}
    cfg, fed, ws, plan, grid = _secure_setup(small_federation, tmp_path, **dp)
    plain = run_stage1(fed, cfg.model, replace(cfg.stage1, secagg=False), cfg.seed)
    strategy = run_secure_server(grid, node_context(0, {}), plan)
    # The range covers C and ten standard deviations of a site's share z·C/√3: public numbers.
    assert strategy.ranges == [initial_clip(cfg.stage1, sites=3)] * 3 == [8.0] * 3
    result = read_stage1_result(ws.result_dir, ws.plan)
    assert all(r.losses == {} for r in result.rounds)
    # Each site drew its share (seeded here, for a reproducible research run): the noise is not
    # the central run's, but the run is reproducible and accounted as the central one.
    (tmp_path / "again").mkdir()
    *_, again_plan, again_grid = _secure_setup(small_federation, tmp_path / "again", **dp)
    again = run_secure_server(again_grid, node_context(0, {}), again_plan)
    np.testing.assert_array_equal(again.state.params, strategy.state.params)
    assert not np.allclose(result.params, plain.params, atol=1e-6)
    assert [r.epsilon for r in strategy.rounds] == pytest.approx([r.epsilon for r in plain.rounds])
    assert [r.epsilon for r in result.rounds] == [r.epsilon for r in strategy.rounds]
    # The server's own noise secret never reaches a client; the sites' seed does in a seeded run.
    sent = [str(dict(rec)) for m in grid.sent for rec in m.content.config_records.values()]
    assert any('"dp_noise_seed": null' in t for t in sent)
    assert not any('"dp_noise_seed": 3' in t for t in sent)


def test_a_secure_run_resumes_from_its_checkpoint(small_federation, tmp_path, task_identity):
    from fedcare_core.resume.keys import stage1_fingerprint

    def fail(node, msg):  # every client silent from round 3 on: the run stops after round 2
        return "silent" if msg.metadata.group_id == "3" else None

    cfg, fed, _, plan, grid = _secure_setup(small_federation, tmp_path, fail)
    path = str(tmp_path / "stage1-checkpoint.npz")
    fingerprint = stage1_fingerprint(fed, cfg.model, cfg.stage1, cfg.seed)
    plan = replace(plan, checkpoint_path=path, checkpoint_fingerprint=fingerprint)
    with pytest.raises(SecureRoundError, match="round 3"):
        run_secure_server(grid, node_context(0, {}), plan)
    grid.fail = lambda node, msg: None
    resumed = run_secure_server(grid, node_context(0, {}), plan)
    assert resumed.resumed_round == 2
    assert {m.metadata.group_id for m in grid.sent[-12:]} == {"3"}  # round 3's stages only
    plain = run_stage1(fed, cfg.model, replace(cfg.stage1, secagg=False), cfg.seed)
    assert [r.round for r in resumed.rounds] == [1, 2, 3]
    for a, b in zip(plain.rounds, resumed.rounds, strict=True):
        for s in a.lambdas:
            assert b.lambdas[s] == pytest.approx(a.lambdas[s], abs=LAMBDA_TOL)
    np.testing.assert_allclose(resumed.state.params, plain.params, atol=1e-6)


def test_secagg_is_refused_where_it_has_no_secure_path(small_federation, tmp_path):
    from fedcare.flower.secagg import secure_plan
    from fedcare_core.errors import ConfigError

    cfg, fed, _ws, plan, _ = _secure_setup(small_federation, tmp_path)
    assert secure_plan(plan) and not secure_plan(replace(plan, stage1=cfg.stage1.__class__()))
    with pytest.raises(ConfigError, match="FedCARE and FedCARE-B only"):
        secure_plan(replace(plan, algorithm="fedavg"))
    with pytest.raises(ValueError, match="needs a Flower backend"):
        run_stage1(fed, cfg.model, cfg.stage1, cfg.seed)
