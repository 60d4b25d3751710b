"""No round aggregates fewer sites than the run's minimum; a site's paths never leave it.

The real ServerApp code and real ClientApps of named sites on an in-process grid whose
ClientApp failures become Flower's error replies (:class:`FlowerGrid`): a site whose policy
breaks while it is joined, one awaiting its operator's approval, one gone silent; under DP or
SecAgg+ never one client, whatever the minimum. Each ends Stage 1 with one line, no result.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from flwr.app import MessageType
from flwr.common import ndarrays_to_parameters

from fedcare.flower.audit import AUDIT_FILE, RECEIVED_FILE
from fedcare.flower.fedxgb.strategy import TreeBagging
from fedcare.flower.final_model import FINAL_MODEL_TYPE
from fedcare.flower.membership import SiteRefused
from fedcare.flower.results import ERROR_FILE, RESULT_FILE, read_rounds
from fedcare.flower.round_floor import TooFewSites
from fedcare.flower.run_plan import RunPlan
from fedcare.flower.secagg_strategy import SecureStage1Strategy
from fedcare.flower.server_app import run_server
from fedcare.flower.site_rules import UNREADABLE_POLICY_RULE, pending_runs
from fedcare_core.config import ModelConfig, Stage1Config
from fedcare_core.config.method_options import baselines
from fedcare_core.files.json_lines import read_lines
from tests.fedcare.flower.test_site_errors import FlowerGrid
from tests.fedcare.flower.test_site_protocol import DIGEST, _site_grid
from tests.fedcare.flower.test_strategy import _loopback

#: The plan's site order (east, north, west) and each site's node on the grid.
NODES = {"north": 2000, "east": 2001, "west": 2002}
BROKEN_POLICY = "max_epsilon: [3\n"  # not YAML
#: Loggers of the site's side (in process here): everything else is the coordinator's.
SITE_LOGGERS = ("fedcare.flower.client_app", "fedcare.flower.site_errors")


def _sites(small_federation, tmp_path, fail=None, policies=None, **plan):
    """Three named sites with folders and audit logs; a federation's plan (minimum 3)."""
    _cfg, _fed, ws, grid = _site_grid(small_federation, tmp_path, grid_cls=FlowerGrid)
    for _app, ctx in grid.apps.values():
        folder = tmp_path / "sites" / ctx.node_config["site-name"]
        ctx.node_config["site-path"] = str(folder)
        ctx.node_config["audit-path"] = str(folder / AUDIT_FILE)
    for name, text in (policies or {}).items():
        (tmp_path / "sites" / name / "policy.yaml").write_text(text)
    if fail is not None:
        grid.fail = fail
    changes = dict(sites=("east", "north", "west"), schema_digest=DIGEST, run_name="r1",
                   broadcast=True, min_sites=3, round_timeout_s=0.3)  # fmt: skip
    return replace(ws.plan, **(changes | plan)), grid


def _coordinator_log(caplog) -> str:
    return "\n".join(r.getMessage() for r in caplog.records if not r.name.startswith(SITE_LOGGERS))


def _nothing_of_the_sites_paths_left(plan: RunPlan, caplog, tmp_path: Path) -> None:
    """No result; the coordinator's error, record and log hold no path of a site."""
    result = Path(plan.result_dir)
    assert not (result / RESULT_FILE).exists()
    records = [result / ERROR_FILE, result / RECEIVED_FILE]
    coordinator = [p.read_text() for p in records if p.exists()] + [_coordinator_log(caplog)]
    assert not any(str(tmp_path / "sites") in text for text in coordinator)
    assert not any("policy.yaml" in text for text in coordinator)


def test_a_policy_broken_while_joined_stops_the_round_naming_the_site_not_its_file(
    small_federation, tmp_path, task_identity, caplog
):
    west = tmp_path / "sites" / "west"

    def break_policy_in_round_2(node, msg):
        if node == NODES["west"] and msg.metadata.group_id == "2":
            (west / "policy.yaml").write_text(BROKEN_POLICY)

    plan, grid = _sites(small_federation, tmp_path, break_policy_in_round_2)
    caplog.set_level(logging.INFO)
    with pytest.raises(TooFewSites) as stopped:
        run_server(grid, plan)
    text = str(stopped.value)
    assert text.startswith(
        "round 2: 2 of the 3 sites needed replied (site 'east', site 'north'); missing: site "
        f"'west' (round 2: error 2: ProtocolError: the site's policy refuses this run "
        f"({UNREADABLE_POLICY_RULE})"
    ), text
    assert "Stage 1 stopped without aggregating round 2" in text and "\n" not in text
    assert [line["round"] for line in read_rounds(plan.result_dir)] == [1]  # not round 2
    assert not any(m.metadata.message_type == FINAL_MODEL_TYPE for m in grid.sent)
    _nothing_of_the_sites_paths_left(plan, caplog, tmp_path)
    error = (Path(plan.result_dir) / ERROR_FILE).read_text().strip().splitlines()[-1]
    assert error.endswith(text)  # what `federation run` prints
    assert str(west / "policy.yaml") in caplog.text  # the site's own log says which file
    (kept,) = [x for x in read_lines(west / AUDIT_FILE) if "refused_by" in x]
    assert kept["refused_by"] == UNREADABLE_POLICY_RULE and "policy.yaml" in kept["detail"]


def test_a_policy_file_that_cannot_be_read_refuses_the_run_without_naming_the_file(
    small_federation, tmp_path, task_identity, caplog
):
    plan, grid = _sites(small_federation, tmp_path, policies={"west": BROKEN_POLICY})
    caplog.set_level(logging.INFO)
    expected = f"site 'west' refused the run by its policy's rule {UNREADABLE_POLICY_RULE}: "
    with pytest.raises(SiteRefused, match=expected) as refused:
        run_server(grid, plan)
    assert str(tmp_path) not in str(refused.value)
    assert not any(m.metadata.message_type == MessageType.TRAIN for m in grid.sent)
    _nothing_of_the_sites_paths_left(plan, caplog, tmp_path)
    (decision,) = [x for x in read_lines(tmp_path / "sites/west" / AUDIT_FILE) if "decision" in x]
    assert decision["rule"] == UNREADABLE_POLICY_RULE
    assert "policy.yaml" in decision["detail"]  # at the site only


def test_a_site_awaiting_approval_past_the_start_up_stops_the_run_before_round_1(
    small_federation, tmp_path, task_identity, caplog
):
    plan, grid = _sites(
        small_federation, tmp_path, policies={"north": "require_approval: true\n"},
        startup_timeout_s=0.5,
    )  # fmt: skip
    started = time.monotonic()
    with pytest.raises(TooFewSites) as stopped:
        run_server(grid, plan)
    assert time.monotonic() - started < 10
    assert str(stopped.value).startswith(
        "start-up: 2 of the 3 sites needed joined within 0.5 s (site 'east', site 'west'); "
        "missing: site 'north' (awaits its operator's approval). Stage 1 stopped without "
        "aggregating any round"
    ), stopped.value
    assert not any(m.metadata.message_type == MessageType.TRAIN for m in grid.sent)
    assert [t.run_name for t in pending_runs(tmp_path / "sites" / "north")] == ["r1"]
    _nothing_of_the_sites_paths_left(plan, caplog, tmp_path)


def test_a_silent_site_ends_the_run_at_the_round_timeout(small_federation, tmp_path, task_identity):
    def silent_from_round_2(node, msg):
        late = msg.metadata.message_type == MessageType.TRAIN and msg.metadata.group_id != "1"
        return "silent" if node == NODES["east"] and late else None

    plan, grid = _sites(small_federation, tmp_path, silent_from_round_2)
    started = time.monotonic()
    with pytest.raises(TooFewSites, match=r"round 2: 2 of the 3 sites needed replied") as stop:
        run_server(grid, plan)
    assert time.monotonic() - started < 10
    assert "site 'east' (round 2: no reply within 0.3 s)" in str(stop.value)


def test_k_of_n_lowers_the_minimum_but_a_round_below_it_still_stops(
    small_federation, tmp_path, task_identity
):
    def silent(nodes):
        def fail(node, msg):
            quiet = node in nodes and msg.metadata.message_type == MessageType.TRAIN
            return "silent" if quiet else None

        return fail

    plan, grid = _sites(small_federation, tmp_path, silent({NODES["west"]}), min_per_round=2)
    strategy = run_server(grid, plan)
    assert [r.participants for r in strategy.rounds] == [(0, 1)] * 3
    (tmp_path / "two").mkdir()
    plan, grid = _sites(
        small_federation, tmp_path / "two", silent({NODES["west"], NODES["north"]}),
        min_per_round=2,
    )  # fmt: skip
    with pytest.raises(TooFewSites, match=r"round 1: 1 of the 2 sites needed replied"):
        run_server(grid, plan)


def test_under_dp_a_round_never_aggregates_one_client(small_federation, tmp_path, task_identity):
    stage1 = Stage1Config(rounds=3, batch_size=32, dp_noise_multiplier=1.0, dp_noise_seed=1)
    lb = _loopback(
        small_federation,
        tmp_path,
        fail=lambda node, msg: "silent" if node != 1000 and msg.metadata.group_id else None,
    ).with_plan(stage1=stage1, round_timeout_s=0.2)
    with pytest.raises(TooFewSites) as stopped:
        run_server(lb.grid, lb.plan)
    assert str(stopped.value).startswith(
        "round 1: 1 of the 2 clients needed replied (client 0); missing: client 1 (round 1: "
        "no reply within 0.2 s), client 2"
    ), stopped.value
    assert read_rounds(lb.plan.result_dir) == []


def test_secure_aggregation_never_sums_one_client(small_federation, tmp_path):
    _cfg, _fed, ws, _grid = _site_grid(small_federation, tmp_path)
    plan = replace(ws.plan, stage1=replace(ws.plan.stage1, secagg=True), num_clients=2)
    strategy = SecureStage1Strategy(plan)
    strategy.membership.clients[7] = 0
    vector = ndarrays_to_parameters([np.zeros(strategy.sum_layout.size, np.float32)])
    result = SimpleNamespace(parameters=vector, metrics={"client-id": 0})
    with pytest.raises(TooFewSites, match=r"round 1: 1 of the 2 clients needed replied"):
        strategy.aggregate_fit(1, [(SimpleNamespace(node_id=7), result)], [])
    assert strategy.rounds == []


def _trees_plan(tmp_path: Path) -> RunPlan:
    return RunPlan(
        objectives=(("los", "regression"),), common_width=3, model=ModelConfig(),
        stage1=Stage1Config(rounds=2), seed=0, num_clients=2, result_dir=str(tmp_path),
        algorithm="fedxgb", baselines=baselines(), sites=("a", "b"), min_sites=2,
        holders=(("los", (0, 1)),),
    )  # fmt: skip


def test_fedxgbs_rounds_never_aggregate_fewer_sites_than_the_minimum(tmp_path):
    strategy = TreeBagging(_trees_plan(tmp_path))
    with pytest.raises(TooFewSites, match=r"round 1: 0 of the 2 sites needed replied; missing"):
        strategy.aggregate_train(1, [])
    with pytest.raises(TooFewSites, match=r"site 'a' \(did not join\), site 'b'"):
        strategy.aggregate_evaluate(1, [])
    assert strategy.rounds == []


def test_the_floor_of_each_kind_of_run(tmp_path):
    plan = replace(_trees_plan(tmp_path), algorithm="fedcare", min_sites=None)
    assert plan.round_floor() == 1  # a cohort's run: no round of nobody
    assert replace(plan, stage1=Stage1Config(secagg=True)).round_floor() == 2
    assert replace(plan, stage1=Stage1Config(dp_epsilon=3.0)).round_floor() == 2
    assert replace(plan, stage1=Stage1Config(dp_noise_multiplier=1.0)).round_floor() == 2
    federation = replace(plan, min_sites=3, sites=("a", "b", "c"))
    assert federation.round_floor() == 3
    assert replace(federation, min_per_round=2).round_floor() == 2
    assert replace(federation, min_per_round=1).round_floor() == 2  # never one site
    quorum = replace(federation, round_deadline_s=5.0).round_quorum()
    assert quorum is not None and quorum.k == 3  # a deadline alone closes with the minimum


def test_a_cohort_run_that_no_client_joined_stops_before_round_1(
    small_federation, tmp_path, task_identity
):
    lb = _loopback(small_federation, tmp_path, fail=lambda node, msg: "silent")
    lb = lb.with_plan(startup_timeout_s=0.3, round_timeout_s=0.2)
    with pytest.raises(TooFewSites, match=r"^start-up: 0 of the 1 clients needed joined") as stop:
        run_server(lb.grid, lb.plan)
    assert "client 0 (did not join), client 1 (did not join), client 2" in str(stop.value)
    assert read_rounds(lb.plan.result_dir) == []
    assert not (Path(lb.plan.result_dir) / RESULT_FILE).exists()


def test_a_cohort_round_that_no_client_answered_stops_the_run(
    small_federation, tmp_path, task_identity
):
    def silent_from_round_2(node, msg):
        return "silent" if msg.metadata.group_id not in ("", "1") else None

    lb = _loopback(small_federation, tmp_path, fail=silent_from_round_2)
    lb = lb.with_plan(round_timeout_s=0.2)
    with pytest.raises(TooFewSites, match=r"^round 2: 0 of the 1 clients needed replied; "):
        run_server(lb.grid, lb.plan)
    assert [r["round"] for r in read_rounds(lb.plan.result_dir)] == [1]
    assert not (Path(lb.plan.result_dir) / RESULT_FILE).exists()
