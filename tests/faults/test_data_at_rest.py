"""SIGKILL of ``fedcare run --backend flower-deployment`` mid-run leaves no client data behind.

The real CLI runs a small Diabetes 130 federation; once round 1 has finished (so every node has
loaded its client's data; with ``--stock-supernodes`` every ClientApp reads it anew), the
``fedcare`` process is killed with SIGKILL: no handler, no
``finally``, no teardown. Afterwards no client data file may exist anywhere under the run
folder's parent, and within a few seconds no process of the run (SuperLink, SuperNodes, warm
SuperExecs, ClientApps) may be left: they die with their parent
(``PR_SET_PDEATHSIG`` and Flower's ``--parent-pid`` watch).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from fedcare.procs.marked import marked_processes
from tests.conftest import REPO_ROOT
from tests.faults.run_processes import MARK_ENV, processes_left
from tests.fedcare.flower.test_workspace import client_files

pytestmark = [pytest.mark.realdata, pytest.mark.slow]

#: Seconds the run may take to finish round 1 on a loaded two-core machine.
START_S = 240


def _rounds_done(parent: Path) -> int:
    logs = parent.glob("fedcare-flwr-*/result/rounds.jsonl")
    return sum(len(p.read_text().splitlines()) for p in logs)


@pytest.mark.parametrize("supernodes", [[], ["--stock-supernodes"]], ids=["warm", "stock"])
def test_sigkill_mid_run_leaves_no_client_data_and_no_process(data_dir, tmp_path, supernodes):
    mark = uuid.uuid4().hex
    path = os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])
    # TMPDIR: the run folder (/tmp/fedcare-flwr-*) is created under tmp_path.
    env = {**os.environ, MARK_ENV: mark, "TMPDIR": str(tmp_path), "PYTHONPATH": path}
    argv = [sys.executable, "-m", "fedcare.cli", "run", "--dataset", "diabetes130"]
    argv += ["--data-dir", str(data_dir), "--max-patients", "3000", "--clients", "3"]
    argv += ["--rounds", "50", "--stage2-epochs", "1", "--quiet"]
    argv += ["--backend", "flower-deployment", *supernodes]
    cli = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + START_S
        while not _rounds_done(tmp_path) and cli.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert cli.poll() is None, cli.communicate()[1].decode()[-2000:]
        assert _rounds_done(tmp_path) >= 1, "no round finished in time"
        assert [p for p in marked_processes(MARK_ENV, mark) if p != cli.pid], "no process runs"
        assert client_files(tmp_path) == []  # not even while it runs
    finally:
        cli.send_signal(signal.SIGKILL)
        cli.wait()
        if cli.stderr is not None:
            cli.stderr.close()
    assert cli.returncode == -signal.SIGKILL
    assert list(tmp_path.glob("fedcare-flwr-*")), "the run folder is not where expected"
    assert client_files(tmp_path) == []
    assert processes_left(mark) == []
