"""``fedcare run --backend flower-deployment --run-dir`` killed mid-Stage 1, then ``--resume``.

The real CLI runs a small Diabetes 130 federation over SuperLink/SuperNode processes, with a
run folder. Once the ServerApp's checkpoint holds round ≥ 3, either the ``fedcare`` process is
killed with SIGKILL (no handler, no teardown: its processes follow it) or the SuperLink is (the
``fedcare`` process must then fail cleanly, status 2, naming the kept checkpoint and the
``--resume`` command). Either way no process of the run may be left, and ``fedcare run
--resume`` must finish the run with the uninterrupted deployment run's λ* of every round and
metrics, within the backends' equivalence tolerances (tests/fedcare/flower/test_deployment.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from fedcare.procs.marked import marked_processes
from fedcare_core.resume.checkpoint import load_checkpoint
from fedcare_core.resume.run_folder import CHECKPOINT_FILE, RESULTS_FILE
from tests.conftest import REPO_ROOT
from tests.faults.run_processes import MARK_ENV, command_line, processes_left
from tests.fedcare.flower.test_deployment import LAMBDA_TOL

pytestmark = [pytest.mark.realdata, pytest.mark.slow, pytest.mark.xdist_group("resume")]

ROUNDS = 12
KILL_AT = 3
#: Every final metric agrees within this across the backends (README, "Same results").
METRIC_TOL = 1e-4
#: Seconds a run may take to write the checkpoint waited for, or to finish.
WAIT_S = 300


def _argv(data_dir: Path, *extra: str) -> list[str]:
    argv = [sys.executable, "-m", "fedcare.cli", "run", "--dataset", "diabetes130", "--quiet"]
    argv += ["--data-dir", str(data_dir), "--no-verify", "--max-patients", "3000"]
    argv += ["--clients", "3", "--rounds", str(ROUNDS), "--stage2-epochs", "1"]
    return [*argv, "--backend", "flower-deployment", *extra]


def _env(tmp_path: Path, mark: str) -> dict[str, str]:
    path = os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])
    # TMPDIR: the Flower work folders (/tmp/fedcare-flwr-*) are created under tmp_path.
    return os.environ | {MARK_ENV: mark, "TMPDIR": str(tmp_path), "PYTHONPATH": path}


def _superlink(mark: str) -> int:
    for pid in marked_processes(MARK_ENV, mark):
        if "flower-superlink" in (command_line(pid) or ""):
            return pid
    pytest.fail("no flower-superlink process found")


def _wait_for_round(proc: subprocess.Popen, checkpoint: Path, round_: int) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            err = proc.stderr.read() if proc.stderr else ""
            pytest.fail(f"the run ended (rc {proc.returncode}) before the kill:\n{err}")
        # Every read must succeed: the checkpoint is never seen half-written.
        snapshot = load_checkpoint(checkpoint)
        if snapshot is not None and snapshot.round >= round_:
            return
        time.sleep(0.005)
    pytest.fail(f"no checkpoint of round {round_} within {WAIT_S} s")


@pytest.fixture(scope="module")
def uninterrupted(data_dir, tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("plain")
    out = tmp / "plain.json"
    run = subprocess.run(
        _argv(data_dir, "--out", str(out)),
        env=_env(tmp, uuid.uuid4().hex),
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert run.returncode == 0, run.stderr
    return json.loads(out.read_text())


def _compare(got: dict, want: dict) -> tuple[float, float]:
    """The largest λ* and metric differences, each asserted within its tolerance."""
    assert [r["round"] for r in got["rounds"]] == list(range(1, ROUNDS + 1))
    assert [r["participants"] for r in got["rounds"]] == [r["participants"] for r in want["rounds"]]
    lam = max(
        abs(g["lambda"][s] - w["lambda"][s])
        for g, w in zip(got["rounds"], want["rounds"], strict=True)
        for s in w["lambda"]
    )
    metric = 0.0
    for name, wanted in want["objectives"].items():
        have = got["objectives"][name]
        pairs = [(have["pooled"], wanted["pooled"])]
        clients = zip(have["clients"], wanted["clients"], strict=True)
        pairs += [(a["value"], b["value"]) for a, b in clients]
        metric = max([metric, *(abs(a - b) for a, b in pairs)])
    print(f"resumed vs uninterrupted: max |Δλ*| = {lam:.3g}, max |Δmetric| = {metric:.3g}")
    assert lam <= LAMBDA_TOL and metric <= METRIC_TOL
    assert got["stage1"]["backend"] == "flower-deployment"
    return lam, metric


@pytest.mark.parametrize("victim", ["fedcare", "superlink"])
def test_a_killed_deployment_run_resumes_to_the_uninterrupted_results(
    data_dir, tmp_path, uninterrupted, victim
):
    mark = uuid.uuid4().hex
    env = _env(tmp_path, mark)
    run_dir = tmp_path / "run"
    checkpoint = run_dir / CHECKPOINT_FILE
    cli = subprocess.Popen(
        _argv(data_dir, "--run-dir", str(run_dir)),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for_round(cli, checkpoint, KILL_AT)
        if victim == "superlink":
            os.kill(_superlink(mark), signal.SIGKILL)
            _, err = cli.communicate(timeout=WAIT_S)
            assert cli.returncode == 2, err
            assert err.startswith("fedcare: error: "), err
            assert "flower-superlink exited" in err or "produced no result" in err, err
            assert err.rstrip().endswith(f"`fedcare run --resume {run_dir.resolve()}`"), err
        else:
            cli.send_signal(signal.SIGKILL)
            cli.wait()
            assert cli.returncode == -signal.SIGKILL
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
    assert processes_left(mark, exclude=cli.pid) == [], "processes of the run survived"
    killed = load_checkpoint(checkpoint)
    assert killed is not None and KILL_AT <= killed.round < ROUNDS, "killed outside Stage 1"
    assert not (run_dir / RESULTS_FILE).exists()

    started = time.monotonic()
    resumed = subprocess.run(
        [sys.executable, "-m", "fedcare.cli", "run", "--resume", str(run_dir), "--quiet"],
        env=env,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    took = time.monotonic() - started
    assert resumed.returncode == 0, resumed.stderr
    assert f"checkpoint of round {killed.round} restored" in resumed.stderr
    assert f"continues at round {killed.round + 1} of {ROUNDS}" in resumed.stderr
    assert processes_left(mark) == []
    print(f"{victim} killed after round {killed.round}; the resumed run took {took:.1f} s")
    _compare(json.loads((run_dir / RESULTS_FILE).read_text()), uninterrupted)
