"""A site's own policy over the real ClientApp: refusals named, approval, the audit logs.

Each node serves a named site whose folder holds a ``policy.yaml``; the handshake carries the
run's terms and the node decides before any training. A refusal stops the run naming the site
and the rule; a pending approval keeps the run waiting; every message a site sends is in its
audit log, and the coordinator's record of what it received has the same digests.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from fedcare.flower.audit import AUDIT_FILE, RECEIVED_FILE
from fedcare.flower.membership import SiteRefused
from fedcare.flower.server_app import run_server
from fedcare.flower.site_rules import approve, pending_runs
from fedcare_core.config import Stage1Config
from fedcare_core.files.json_lines import read_lines
from tests.fedcare.flower.test_site_protocol import DIGEST, NAMES, _site_grid


def _with_policies(small_federation, tmp_path, policies, **plan_changes):
    tmp_path.mkdir(parents=True, exist_ok=True)
    _cfg, _fed, ws, grid = _site_grid(small_federation, tmp_path)
    for _app, ctx in grid.apps.values():
        name = ctx.node_config["site-name"]
        folder = tmp_path / "sites" / name
        ctx.node_config["site-path"] = str(folder)
        ctx.node_config["audit-path"] = str(folder / AUDIT_FILE)
        if name in policies:
            (folder / "policy.yaml").write_text(policies[name])
    plan = replace(
        ws.plan, sites=tuple(sorted(NAMES)), schema_digest=DIGEST, run_name="r1", **plan_changes
    )
    return plan, grid


@pytest.mark.parametrize(
    ("policy", "rule"),
    [
        ("require_secagg: true\n", "require_secagg: it requires secure aggregation"),
        ("max_epsilon: 5\n", "max_epsilon: it caps ε at 5 (pld); the run has no differential"),
        ("max_rounds: 2\n", "max_rounds: it allows at most 2 rounds, not 3"),
        ("objectives: [los]\n", "objectives: it does not take part in models of"),
    ],
)
def test_a_run_that_breaks_a_sites_policy_is_refused_before_any_training(
    small_federation, tmp_path, task_identity, policy, rule
):
    plan, grid = _with_policies(small_federation, tmp_path, {"west": policy})
    expected = re.escape(f"site 'west' refused the run by its policy's rule {rule}")
    with pytest.raises(SiteRefused, match=expected):
        run_server(grid, plan)
    assert not any(m.metadata.message_type == "train" for m in grid.sent)
    (decision,) = [x for x in read_lines(tmp_path / "sites/west" / AUDIT_FILE) if "decision" in x]
    assert decision["decision"] == "refused" and decision["run_name"] == "r1"


def test_an_epsilon_cap_admits_a_run_whose_noise_keeps_within_it(
    small_federation, tmp_path, task_identity
):
    stage1 = Stage1Config(rounds=3, batch_size=32, dp_noise_multiplier=2.0, dp_noise_seed=1)
    within = f"max_epsilon: {stage1.privacy().epsilon_after(3) + 0.01}\n"
    plan, grid = _with_policies(small_federation, tmp_path, {"west": within}, stage1=stage1)
    assert len(run_server(grid, plan).rounds) == 3
    plan, grid = _with_policies(
        small_federation, tmp_path / "tight", {"west": "max_epsilon: 1\n"}, stage1=stage1
    )
    with pytest.raises(SiteRefused, match=r"max_epsilon: it caps ε at 1 \(pld\); the run has ε ="):
        run_server(grid, plan)


def test_a_run_waits_for_the_operators_approval_then_runs(
    small_federation, tmp_path, task_identity
):
    plan, grid = _with_policies(small_federation, tmp_path, {"north": "require_approval: true\n"})
    north = tmp_path / "sites" / "north"

    def operator():  # approves the pending run once it appears
        deadline = time.time() + 60
        while time.time() < deadline and not pending_runs(north):
            time.sleep(0.05)
        assert [t.run_name for t in pending_runs(north)] == ["r1"]
        approve(north, "r1")

    thread = threading.Thread(target=operator)
    thread.start()
    strategy = run_server(grid, plan)
    thread.join()
    assert any("site 'north' awaits its operator's approval" in n for n in strategy.notes)
    assert [r.participants for r in strategy.rounds] == [(0, 1, 2)] * 3
    assert pending_runs(north) == []


def test_the_sites_audit_logs_match_the_coordinators_record(
    small_federation, tmp_path, task_identity
):
    plan, grid = _with_policies(small_federation, tmp_path, {})
    run_server(grid, plan)
    received = read_lines(Path(plan.result_dir) / RECEIVED_FILE)
    for name in NAMES:
        sent = read_lines(tmp_path / "sites" / name / AUDIT_FILE)
        messages = [(x["round"], x["kind"], x["sha256"]) for x in sent if "sha256" in x]
        got = [
            (x["round"], x["kind"], x["sha256"])
            for x in received
            if x["site"] == name and "sha256" in x
        ]
        assert messages == got and len([m for m in messages if m[1] == "train"]) == 3
        joined = [x for x in sent if x.get("decision") == "joined"]
        assert len(joined) == 1 and joined[0]["run_name"] == "r1"
        assert all("bytes" in x and x["bytes"] > 0 for x in sent if "sha256" in x)


def test_an_error_reply_is_recorded_by_its_code_not_a_digest(task_identity):
    from flwr.app import Error, Message, MessageType, RecordDict

    from fedcare.flower.audit import message_line

    asked = Message(RecordDict(), 1001, MessageType.TRAIN, group_id="2")
    line = message_line(Message(Error(5, "Node Unavailable"), reply_to=asked), site="north")
    assert line["error"] == 5 and line["round"] == "2" and "sha256" not in line


def test_a_site_checks_the_coordinators_record_and_finds_an_altered_message(
    small_federation, tmp_path, task_identity
):
    import json

    from fedcare.sites.audit_check import check_received, runs_sent
    from fedcare_core.errors import ConfigError

    plan, grid = _with_policies(small_federation, tmp_path, {})
    run_server(grid, plan)
    record = Path(plan.result_dir) / RECEIVED_FILE
    name = NAMES[0]
    log = tmp_path / "sites" / name / AUDIT_FILE
    (run,) = runs_sent(log)
    assert run.run_name == "r1" and run.decision == "joined" and run.messages >= 4
    check = check_received(log, name, "r1", record)
    assert check.agrees and check.recorded == run.messages and check.unrecorded == ()
    # The coordinator's record says the site sent round 2's update with other content.
    lines = [json.loads(x) for x in record.read_text().splitlines()]
    (altered,) = [x for x in lines if x["site"] == name and x["round"] == "2"
                  and x["kind"] == "train"]  # fmt: skip
    altered["sha256"] = "0" * 64
    record.write_text("".join(json.dumps(x) + "\n" for x in lines))
    check = check_received(log, name, "r1", record)
    assert not check.agrees and check.never_sent == (("2", "train", "0" * 64),)
    assert [m[:2] for m in check.unrecorded] == [("2", "train")]  # what it did send
    with pytest.raises(ConfigError, match="holds no run of that name \\(runs: r1\\)"):
        check_received(log, name, "r2", record)
    record.write_text(record.read_text() + '{"site": "x"}\n')
    with pytest.raises(ConfigError, match=f"--received {record}, line {len(lines) + 1}: not a"):
        check_received(log, name, "r1", record)
