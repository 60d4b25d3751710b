from dataclasses import dataclass, replace

import numpy as np
import pytest
from flwr.app import Error, Message, MessageType, RecordDict

from fedcare.flower.client_app import build_client_app, node_config_data_path
from fedcare.flower.flower_options import FlowerConfig
from fedcare.flower.messages import ProtocolError, encode_client_update, encode_identity
from fedcare.flower.results import read_rounds, read_stage1_result
from fedcare.flower.run_plan import RunPlan
from fedcare.flower.server_app import run_server
from fedcare.flower.strategy import FedCareStrategy
from fedcare.flower.workspace import Workspace, prepare_workspace
from fedcare_core.config import ExperimentConfig, ModelConfig, Stage1Config
from fedcare_core.data.clients import Federation
from fedcare_core.nn.param_vectors import param_layout
from fedcare_core.stage1.loop import (
    ClientUpdate,
    ObjectiveUpdate,
    ServerState,
    build_model,
    client_update,
    server_step,
)
from tests.fedcare.flower.conftest import LoopbackGrid, node_context

TINY = ModelConfig(hidden=4, representation=2, head_hidden=(2, 2))
OBJS = (("a", "binary"), ("b", "regression"))


def _plan(tmp_path, **kw):
    base = dict(
        objectives=OBJS,
        common_width=2,
        model=TINY,
        stage1=Stage1Config(rounds=3),
        seed=0,
        num_clients=2,
        result_dir=str(tmp_path),
        round_timeout_s=0.3,
        startup_timeout_s=0.3,
        pull_interval_s=0.01,
    )
    base.update(kw)
    return RunPlan(**base)


def _reply(node, update):
    instr = Message(RecordDict(), node, MessageType.TRAIN)
    return Message(encode_client_update(update, ["a", "b"]), reply_to=instr)


def _unit(p, i, scale):
    v = np.zeros(p, dtype=np.float32)
    v[i] = scale
    return v


def _hand_made(strategy):
    p = strategy.layout.total
    nbuf = strategy.state.buffers.size
    u0 = ClientUpdate(0, {"a": ObjectiveUpdate(_unit(p, 0, 3.0), 10, 0.7)}, np.ones(nbuf), 30)
    u1 = ClientUpdate(1, {"b": ObjectiveUpdate(_unit(p, 1, 4.0), 5, 0.2)}, np.zeros(nbuf), 10)
    return u0, u1


def test_aggregate_train_takes_the_closed_form_min_norm_step(tmp_path, task_identity):
    strategy = FedCareStrategy(_plan(tmp_path))
    strategy.membership.clients = {100: 0, 101: 1}
    w0 = strategy.state.params.copy()
    u0, u1 = _hand_made(strategy)
    arrays, metrics = strategy.aggregate_train(1, [_reply(100, u0), _reply(101, u1)])
    # Orthogonal Δ_a = 3 e0, Δ_b = 4 e1: λ*_a = 16/25, ‖d‖² = 9·16/25.
    assert metrics["lambda.a"] == pytest.approx(0.64, abs=1e-12)
    assert metrics["lambda.b"] == pytest.approx(0.36, abs=1e-12)
    assert metrics["d-sq-norm"] == pytest.approx(5.76, rel=1e-9)
    expected = w0.astype(np.float64)
    expected[0] -= 0.01 * 0.64 * 3.0
    expected[1] -= 0.01 * 0.36 * 4.0
    np.testing.assert_allclose(strategy.state.params, expected.astype(np.float32), atol=1e-7)
    # BatchNorm statistics: example-weighted (30 : 10) mean of the clients' buffers.
    np.testing.assert_allclose(strategy.state.buffers, 0.75)
    assert arrays["params"].numpy().tobytes() == strategy.state.params.tobytes()
    assert strategy.rounds[0].participants == (0, 1)


def test_aggregation_does_not_depend_on_reply_order(tmp_path, task_identity):
    results = []
    for order in ((0, 1), (1, 0)):
        strategy = FedCareStrategy(_plan(tmp_path))
        u0, u1 = _hand_made(strategy)
        shared = np.full(strategy.layout.total, 0.1, np.float32)
        u = (
            ClientUpdate(0, {"a": ObjectiveUpdate(3 * shared, 7, 0.1)}, u0.buffers, 30),
            ClientUpdate(
                1, {"a": ObjectiveUpdate(shared, 3, 0.1), **u1.objectives}, u1.buffers, 10
            ),
        )
        strategy.aggregate_train(1, [_reply(100 + i, u[i]) for i in order])
        results.append(strategy.state.params.tobytes())
    assert results[0] == results[1]


def test_error_reply_skips_the_client_and_marks_its_objective(tmp_path, task_identity):
    strategy = FedCareStrategy(_plan(tmp_path))
    strategy.membership.clients = {100: 0, 101: 1}
    u0, _ = _hand_made(strategy)
    head_b = strategy.layout.heads["b"]
    before = strategy.state.params[head_b].copy()
    failed = Message(Error(code=2, reason="boom"), reply_to=Message(RecordDict(), 101, "train"))
    _, metrics = strategy.aggregate_train(2, [_reply(100, u0), failed])
    info = strategy.rounds[-1]
    assert info.participants == (0,) and info.missing_objectives == ("b",)
    assert info.lambdas == {"a": 1.0} and metrics["lambda.b"] == 0.0
    np.testing.assert_array_equal(strategy.state.params[head_b], before)
    assert 101 in strategy.clients  # an error is not a disconnection: tried again next round
    assert any("client 1" in n and "skipped" in n and "boom" in n for n in strategy.notes)
    assert any("no update for b" in n for n in strategy.notes)


# ---- the strategy driving real ClientApps through an in-process Grid -------------------------


@dataclass
class Loopback:
    cfg: ExperimentConfig
    fed: Federation
    ws: Workspace
    grid: LoopbackGrid
    plan: RunPlan

    def with_plan(self, **changes):
        self.plan = replace(self.plan, **changes)
        return self


def _loopback(small_federation, tmp_path, fail=None):
    cfg, fed = small_federation
    ws = prepare_workspace(
        fed, cfg.model, cfg.stage1, cfg.seed, FlowerConfig(workdir_parent=str(tmp_path))
    )
    app = build_client_app(node_config_data_path)
    apps = {
        1000 + k: (app, node_context(1000 + k, {"data-path": str(ws.client_dir(k))}))
        for k in range(len(fed.clients))
    }
    grid = LoopbackGrid(apps, fail or (lambda node, msg: None))
    return Loopback(cfg, fed, ws, grid, ws.plan)


def _reference_stage1(fed, cfg):
    """Algorithm 1 with every client starting from an untouched copy of w^t."""
    kinds = {o.name: o.kind for o in fed.objectives}
    model = build_model(fed.common_width, fed.objective_names, cfg.model, cfg.seed)
    from fedcare_core.nn.param_vectors import get_buffers, get_params

    state = ServerState(get_params(model), get_buffers(model))
    rounds = []
    for t in range(1, cfg.stage1.rounds + 1):
        ups = [
            client_update(
                model,
                state.params.copy(),
                state.buffers.copy(),
                c,
                kinds,
                cfg.stage1,
                seed=cfg.seed,
                round_idx=t,
            )
            for c in fed.clients
        ]
        state, info = server_step(
            state, ups, fed.objective_names, param_layout(model), cfg.stage1, t
        )
        rounds.append(info)
    return state, rounds


def test_flower_layer_reproduces_algorithm_1_bit_for_bit(small_federation, tmp_path, task_identity):
    lb = _loopback(small_federation, tmp_path)
    strategy = run_server(lb.grid, lb.plan)
    state, rounds = _reference_stage1(lb.fed, lb.cfg)
    assert [r.lambdas for r in strategy.rounds] == [r.lambdas for r in rounds]
    assert strategy.state.params.tobytes() == state.params.tobytes()
    assert strategy.state.buffers.tobytes() == state.buffers.tobytes()
    assert all(r.participants == (0, 1, 2) for r in strategy.rounds)
    # the result folder the ServerApp leaves behind reads back as the core's Stage1Result
    result = read_stage1_result(lb.ws.result_dir, lb.plan)
    assert result.params.tobytes() == state.params.tobytes()
    assert [r.lambdas for r in result.rounds] == [r.lambdas for r in rounds]
    assert [int(r["round"]) for r in read_rounds(lb.ws.result_dir)] == [1, 2, 3]
    # handshake first, then one train message per client per round
    kinds = [m.metadata.message_type for m in lb.grid.sent]
    assert kinds == ["query"] * 3 + ["train"] * 9


def _client1_only_objectives(fed):
    others = {s for c in fed.clients if c.client_id != 1 for s in c.objectives}
    return set(fed.clients[1].objectives) - others


def test_a_silent_client_is_skipped_each_round_and_the_run_completes(
    small_federation, tmp_path, task_identity
):
    def fail(node, msg):
        rnd = msg.metadata.group_id
        return "silent" if node == 1001 and rnd and int(rnd) >= 2 else None

    lb = _loopback(small_federation, tmp_path, fail).with_plan(round_timeout_s=0.3)
    strategy = run_server(lb.grid, lb.plan)
    assert [r.participants for r in strategy.rounds] == [(0, 1, 2), (0, 2), (0, 2)]
    assert [(x.round, x.client_id, x.dropped) for x in strategy.losses] == [
        (2, 1, False),
        (3, 1, False),
    ]
    assert "no reply within 0.3 s" in strategy.losses[0].reason
    assert strategy.notes[0].startswith("round 2: client 1 (node 1001) skipped: no reply")
    round3 = [m for m in lb.grid.sent if m.metadata.group_id == "3"]
    assert sorted(m.metadata.dst_node_id for m in round3) == [1000, 1001, 1002]  # asked again
    only1 = _client1_only_objectives(lb.fed)
    assert set(strategy.rounds[1].missing_objectives) == only1
    assert set(strategy.rounds[1].lambdas) == set(lb.fed.objective_names) - only1


def test_a_node_the_superlink_reports_offline_is_dropped(small_federation, tmp_path, task_identity):
    from flwr.app import Error

    class OfflineGrid(LoopbackGrid):
        def push_messages(self, messages):
            messages = list(messages)
            ids = super().push_messages(messages)
            for mid, msg in zip(ids, messages, strict=True):
                if msg.metadata.dst_node_id == 1001 and msg.metadata.group_id == "2":
                    # what the SuperLink returns once the node missed its heartbeats
                    self.replies[mid] = Message(Error(5, "Node Unavailable"), reply_to=msg)
                    del self.apps[1001]
            return ids

    lb = _loopback(small_federation, tmp_path)
    lb.grid.__class__ = OfflineGrid
    strategy = run_server(lb.grid, lb.plan)
    assert [r.participants for r in strategy.rounds] == [(0, 1, 2), (0, 2), (0, 2)]
    assert [(x.round, x.client_id, x.dropped) for x in strategy.losses] == [(2, 1, True)]
    assert "lost" in strategy.notes[0] and "Node Unavailable" in strategy.notes[0]
    round3 = [m for m in lb.grid.sent if m.metadata.group_id == "3"]
    assert sorted(m.metadata.dst_node_id for m in round3) == [1000, 1002]


def test_the_superlinks_own_node_unavailable_reply_drops_the_right_client(
    small_federation, tmp_path, task_identity
):
    # The SuperLink answers for a dead node itself (src = the SuperLink, not the node): only
    # the PollingGrid's record of the instruction says which client it was.
    from flwr.server.superlink.linkstate.utils import (
        create_message_error_unavailable_res_message,
    )

    class SuperLinkGrid(LoopbackGrid):
        def push_messages(self, messages):
            messages = list(messages)
            ids = super().push_messages(messages)
            for mid, msg in zip(ids, messages, strict=True):
                if msg.metadata.dst_node_id == 1001 and msg.metadata.group_id == "2":
                    self.replies[mid] = create_message_error_unavailable_res_message(
                        msg.metadata, "node_unavail"
                    )
            return ids

    lb = _loopback(small_federation, tmp_path)
    lb.grid.__class__ = SuperLinkGrid
    strategy = run_server(lb.grid, lb.plan)
    assert [r.participants for r in strategy.rounds] == [(0, 1, 2), (0, 2), (0, 2)]
    assert [(x.round, x.client_id, x.node_id, x.dropped) for x in strategy.losses] == [
        (2, 1, 1001, True)
    ]
    assert strategy.clients == {1000: 0, 1002: 2}


def test_a_node_that_leaves_is_dropped_and_a_reconnected_one_rejoins(
    small_federation, tmp_path, task_identity
):
    lb = _loopback(small_federation, tmp_path)
    lb.with_plan(stage1=Stage1Config(rounds=4, batch_size=32))
    app, ctx = lb.grid.apps[1001]

    def on_round(info, wall_s):
        if info.round == 1:  # client 1's SuperNode goes offline...
            del lb.grid.apps[1001]
        if info.round == 2:  # ...and comes back with a new node id
            lb.grid.apps[2001] = (app, node_context(2001, ctx.node_config))

    strategy = run_server(lb.grid, lb.plan, on_round=on_round)
    assert [r.participants for r in strategy.rounds] == [(0, 1, 2), (0, 2), (0, 1, 2), (0, 1, 2)]
    assert [(x.round, x.client_id, x.dropped) for x in strategy.losses] == [(2, 1, True)]
    assert "left the federation" in strategy.notes[0]
    assert strategy.clients == {1000: 0, 1002: 2, 2001: 1}


def test_stops_when_d_sq_norm_reaches_epsilon(small_federation, tmp_path, task_identity):
    lb = _loopback(small_federation, tmp_path)
    lb.with_plan(stage1=Stage1Config(rounds=5, batch_size=32, epsilon=1e9))
    strategy = run_server(lb.grid, lb.plan)
    assert strategy.converged and len(strategy.rounds) == 1


def test_handshake_waits_then_proceeds_with_the_clients_present(
    small_federation, tmp_path, task_identity
):
    lb = _loopback(small_federation, tmp_path)
    del lb.grid.apps[1002]
    lb.with_plan(startup_timeout_s=0.3, stage1=Stage1Config(rounds=1, batch_size=32))
    strategy = run_server(lb.grid, lb.plan)
    assert strategy.rounds[0].participants == (0, 1)
    assert any("2 of 3 clients joined" in n and "absent: client 2" in n for n in strategy.notes)


def test_two_nodes_claiming_one_client_is_an_error(small_federation, tmp_path, task_identity):
    lb = _loopback(small_federation, tmp_path)
    lb.grid.apps[1002] = lb.grid.apps[1001]
    with pytest.raises(ProtocolError, match="two nodes claim client 1"):
        run_server(lb.grid, lb.plan)
    assert (lb.ws.result_dir / "error.txt").exists()


def test_identity_reply_encodes_the_client_and_no_row_count():
    content = encode_identity(1)
    assert dict(content.metric_records["metrics"]) == {"client-id": 1, "protocol": 3}
