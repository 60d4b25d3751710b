"""A run killed with SIGKILL mid-Stage 1 and resumed gives the uninterrupted run's document.

The real ``fedcare run --run-dir`` runs as a child process on a small Diabetes 130 setting; it
is killed (SIGKILL: no handler, no flush) once a checkpoint of round ≥ 2 exists, resumed and
killed again a few rounds later, then resumed to the end. The final ``results.json`` must equal
an uninterrupted run's document in everything but ``timing``: λ* of every round and every
metric, bit for bit.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fedcare_core.resume.checkpoint import load_checkpoint
from fedcare_core.resume.run_folder import CHECKPOINT_FILE, RESULTS_FILE
from tests.conftest import REPO_ROOT

pytestmark = [pytest.mark.realdata]

ROUNDS = 60
FLAGS = [
    "--dataset",
    "diabetes130",
    "--max-patients",
    "3000",
    "--clients",
    "3",
    "--rounds",
    str(ROUNDS),
    "--stage2-epochs",
    "3",
    "--quiet",
]
#: Seconds a child may take to write the checkpoint waited for.
WAIT_S = 300


def _cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "fedcare.cli", "run", *args]


def _env(data_dir: Path) -> dict[str, str]:
    path = os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])
    return os.environ | {"PYTHONPATH": path, "FEDCARE_DATA_DIR": str(data_dir)}


def _kill_after_round(cmd: list[str], env: dict[str, str], checkpoint: Path, round_: int) -> int:
    """Start ``cmd``, SIGKILL it once ``checkpoint`` holds round ≥ ``round_``; that round."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + WAIT_S
    try:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                said = proc.stderr.read().decode(errors="replace")[-2000:] if proc.stderr else ""
                pytest.fail(
                    f"the run ended (rc {proc.returncode}) before it could be killed:\n{said}"
                )
            # Every read must succeed: the checkpoint is never seen half-written.
            snapshot = load_checkpoint(checkpoint)
            if snapshot is not None and snapshot.round >= round_:
                break
            time.sleep(0.005)
        else:
            pytest.fail(f"no checkpoint of round {round_} within {WAIT_S} s")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    snapshot = load_checkpoint(checkpoint)
    assert snapshot is not None
    return snapshot.round


def _document(path: Path) -> dict:
    document = json.loads(path.read_text())
    document.pop("timing")
    return document


def test_sigkill_mid_stage1_then_resume_equals_the_uninterrupted_run(data_dir, tmp_path):
    env = _env(data_dir)
    run_dir = tmp_path / "run"
    checkpoint = run_dir / CHECKPOINT_FILE
    plain_out = tmp_path / "plain.json"
    # The uninterrupted run, alongside the killed ones.
    plain = subprocess.Popen(
        _cmd(*FLAGS, "--out", str(plain_out)),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )

    first = _kill_after_round(_cmd("--run-dir", str(run_dir), *FLAGS), env, checkpoint, 2)
    second = _kill_after_round(
        _cmd("--resume", str(run_dir), "--quiet"), env, checkpoint, first + 3
    )
    assert 2 <= first < first + 3 <= second < ROUNDS, "killed outside Stage 1"
    assert not (run_dir / RESULTS_FILE).exists()

    resumed = subprocess.run(
        _cmd("--resume", str(run_dir), "--quiet"), env=env, capture_output=True, text=True
    )
    assert resumed.returncode == 0, resumed.stderr
    assert f"checkpoint of round {second} restored" in resumed.stderr
    assert f"continues at round {second + 1} of {ROUNDS}" in resumed.stderr

    _, plain_err = plain.communicate(timeout=WAIT_S)
    assert plain.returncode == 0, plain_err

    got, want = _document(run_dir / RESULTS_FILE), _document(plain_out)
    assert [r["lambda"] for r in got["rounds"]] == [r["lambda"] for r in want["rounds"]]
    assert got["objectives"] == want["objectives"]
    assert got == want
