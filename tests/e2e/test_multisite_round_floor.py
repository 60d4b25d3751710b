"""A refused or silent site stops a real federation's run; a round never aggregates fewer sites.

Two hospitals of the real Diabetes 130 file (2,000 encounters each), each prepared and joined
as its own ``fedcare site join`` process, a TLS coordinator with node authentication, and
``fedcare federation run --min-sites 2`` (issue 52, point 2):

1. a site whose operator has not approved the run: the run waits its start-up timeout, then
   ends with status 2 and one line (1 of the 2 sites needed; the site awaiting approval), no
   Stage 1 document;
2. a site whose policy file breaks while it is joined, after round 1: round 2 ends the run
   with status 2 and one line naming the site and the rule, promptly (well within the round
   timeout), no Stage 1 document, nothing of round 2 aggregated;
3. then a plain run over both sites still succeeds (the nodes were never restarted).

Neither the coordinator's output, its logs nor its run folders hold any path of a site's; no
process of the runs is left.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fedcare.flower.results import read_rounds
from fedcare.procs.ports import free_port
from tests.e2e.test_multisite_federation import (
    _federation_processes,
    fedcare,
    join,
    prepare_sites,
    stop,
)

pytestmark = [pytest.mark.slow, pytest.mark.realdata]
ROUND_TIMEOUT_S = 120.0
STARTUP_TIMEOUT_S = 30.0


def _run(state: Path, schema: Path, out: Path, name: str) -> list[str]:
    return [sys.executable, "-m", "fedcare.cli", "federation", "run", "--state-dir", str(state),
            "--schema", str(schema), "--min-sites", "2", "--rounds", "3", "--seed", "0",
            "--out", str(out), "--quiet", "--name", name,
            "--startup-timeout", f"{STARTUP_TIMEOUT_S:g}",
            "--round-timeout", f"{ROUND_TIMEOUT_S:g}"]  # fmt: skip


def _refused(done: subprocess.CompletedProcess[str], out: Path) -> str:
    """The run ended with status 2, one line, no traceback and no Stage 1 document."""
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fedcare: error: "), done.stderr
    assert not out.exists()
    return lines[0]


def _wait_online(state: Path, names: list[str]) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        status = fedcare("federation", "status", "--state-dir", str(state)).stdout
        if all(f"{n}: online" in status for n in names):
            return
        time.sleep(2)
    raise AssertionError(f"sites not online:\n{status}")


def _coordinator_text(state: Path, *outputs: str) -> str:
    """Everything the coordinator printed and keeps (logs, run folders, state)."""
    texts = list(outputs)
    for path in state.rglob("*"):
        if path.is_file() and path.suffix not in (".db", ".npz", ".key", ".crt", ".pem"):
            texts.append(path.read_text(errors="replace"))
    return "\n".join(texts)


def _awaiting_approval(state: Path, schema: Path, site: Path, root: Path) -> list[str]:
    """The run waits its start-up timeout for the site's approval, then ends; what it said."""
    (site / "policy.yaml").write_text("require_approval: true\n")
    out = root / "awaiting.json"
    started = time.monotonic()
    done = subprocess.run(_run(state, schema, out, "awaiting"), capture_output=True, text=True,
                          timeout=STARTUP_TIMEOUT_S + 240)  # fmt: skip
    took = time.monotonic() - started
    line = _refused(done, out)
    assert f"start-up: 1 of the 2 sites needed joined within {STARTUP_TIMEOUT_S:g} s" in line
    assert f"missing: site '{site.name}' (awaits its operator's approval)" in line, line
    assert took < STARTUP_TIMEOUT_S + 120, took
    assert "awaiting" in fedcare("site", "pending", "--site", str(site)).stdout
    (site / "policy.yaml").unlink()
    return [done.stdout, done.stderr]


def _broken_while_joined(state: Path, schema: Path, site: Path, root: Path) -> list[str]:
    """The site's policy file breaks after round 1: the run ends at once; what it said."""
    out = root / "broken.json"
    run = subprocess.Popen(_run(state, schema, out, "broken"), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)  # fmt: skip
    result = state / "runs" / "broken" / "result"
    deadline = time.monotonic() + 600
    while not read_rounds(result):
        assert run.poll() is None, run.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.2)
    (site / "policy.yaml").write_text("max_epsilon: [3\n")  # not YAML
    broke = time.monotonic()
    stdout, stderr = run.communicate(timeout=ROUND_TIMEOUT_S + 120)
    took = time.monotonic() - broke
    line = _refused(subprocess.CompletedProcess(run.args, run.returncode, stdout, stderr), out)
    assert "1 of the 2 sites needed replied" in line, line
    assert f"missing: site '{site.name}' (round " in line and "policy_unreadable" in line, line
    assert took < ROUND_TIMEOUT_S / 2, took  # its error reply: no wait for the timeout
    rounds = read_rounds(result)
    assert len(rounds) < 3 and all(r["participants"] == [0, 1] for r in rounds)
    audit = [json.loads(x) for x in (site / "audit.jsonl").read_text().splitlines()]
    kept = [x for x in audit if x.get("refused_by") == "policy_unreadable"]
    assert kept and "policy.yaml" in kept[-1]["detail"]  # the site knows which file
    (site / "policy.yaml").unlink()
    return [stdout, stderr]


def test_a_refused_or_broken_site_stops_the_run_within_its_timeouts(
    data_dir: Path, tmp_path: Path
) -> None:
    schema, sites = prepare_sites(tmp_path, data_dir, encounters=2000)
    names = sorted(sites)[:2]
    state, port = tmp_path / "state", free_port()
    fedcare("federation", "start", "--state-dir", str(state), "--port", str(port))
    outputs: list[str] = []
    try:
        for name in names:
            card = sites[name] / "site-card.json"
            fedcare("federation", "register", "--state-dir", str(state), "--site", str(card))
        ca = state / "ca.crt"
        joins = {n: join(sites[n], port, ca, tmp_path / f"join-{n}.log") for n in names}
        try:
            _wait_online(state, names)
            outputs += _awaiting_approval(state, schema, sites[names[1]], tmp_path)
            outputs += _broken_while_joined(state, schema, sites[names[1]], tmp_path)
            out = tmp_path / "fine.json"  # the policy fixed: both still take part
            done = subprocess.run(_run(state, schema, out, "fine"), capture_output=True,
                                  text=True, timeout=900)  # fmt: skip
            outputs += [done.stdout, done.stderr]
            assert done.returncode == 0, done.stderr
            doc = json.loads(out.read_text())
            assert [r["participant_sites"] for r in doc["rounds"]] == [names] * 3
        finally:
            for proc in joins.values():
                stop(proc)
        assert not _federation_processes(tmp_path)  # but the coordinator's SuperLink
        said = _coordinator_text(state, *outputs)
    finally:
        fedcare("federation", "stop", "--state-dir", str(state), check=False)
    assert not any(str(sites[name]) in said for name in names)
    assert "policy.yaml" not in said
