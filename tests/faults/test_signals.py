"""SIGINT and SIGTERM end every backend and the experiment grid promptly and cleanly.

Each test starts the real ``fedcare`` CLI on a small Diabetes 130 federation in a session of
its own, with an environment marker every process it starts inherits (Ray's, Flower's, Dask's
and the pools' included), waits until it is working, and signals it. It must then exit with
128 + the signal's number, print exactly one ``fedcare: interrupted (SIG…)`` line and no
traceback or native stack dump, leave no process carrying the marker, and write nothing after
the message (no ``--out`` file, no further grid cell).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fedcare.procs.marked import marked_processes
from tests.conftest import REPO_ROOT
from tests.faults.run_processes import FOLLOW_S, MARK_ENV, processes_left

pytestmark = pytest.mark.realdata

#: Seconds a run may take to get going on a loaded two-core machine.
START_S = 240
#: Seconds from the signal to the exit, and for the run's processes to be gone after it.
STOP_S = 30
#: What must never appear on stderr.
DUMPS = ("Traceback", "Fatal Python error", "SIGTERM received", "Aborted")
SMALL = ["--max-patients", "3000", "--clients", "3", "--no-verify"]


class Cli:
    """One ``fedcare`` process in its own session, marked, with stderr in a file."""

    def __init__(self, args: list[str], tmp_path: Path, tmpdir: Path | None = None) -> None:
        self.mark = uuid.uuid4().hex
        self.tmp = tmpdir or tmp_path
        self.stderr_path = tmp_path / "stderr.txt"
        path = os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])
        env = {
            **os.environ,
            MARK_ENV: self.mark,
            "TMPDIR": str(self.tmp),
            "PYTHONPATH": path,
            "FLWR_TELEMETRY_ENABLED": "0",
            "DO_NOT_TRACK": "1",
            # A run that hangs after the signal is aborted and shows where (see signal()).
            "PYTHONFAULTHANDLER": "1",
        }
        with self.stderr_path.open("wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "fedcare.cli", *args],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=err,
                start_new_session=True,
            )

    def wait_until(self, ready: Callable[[], bool]) -> None:
        deadline = time.monotonic() + START_S
        while not ready() and self.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert self.proc.poll() is None, self.stderr()[-2000:]
        assert ready(), "the run did not get going in time"

    def signal(self, sig: int, *, group: bool = False) -> float:
        """Send ``sig`` (to the whole session's group: as a terminal's Ctrl-C); seconds to exit."""
        t0 = time.monotonic()
        if group:
            os.killpg(self.proc.pid, sig)
        else:
            self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=STOP_S)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGABRT)  # faulthandler: every thread's stack
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
            self.proc.kill()
            self.proc.wait()
            pytest.fail(f"still running {STOP_S} s after the signal: {self.stderr()[-6000:]}")
        return time.monotonic() - t0

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def processes_left(self, within_s: float = FOLLOW_S) -> list[str]:
        """The command lines of the run's processes still alive after ``within_s``; kill them."""
        return processes_left(self.mark, within_s)

    def assert_clean_exit(self, sig: int) -> None:
        err = self.stderr()
        assert self.proc.returncode == 128 + sig, err[-2000:]
        messages = [line for line in err.splitlines() if line.startswith("fedcare:")]
        assert messages == [f"fedcare: interrupted ({signal.Signals(sig).name})"], err[-2000:]
        assert err.rstrip().endswith(messages[0])  # nothing after the message
        assert not [d for d in DUMPS if d in err], err[-3000:]


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A short TMPDIR: Ray's socket paths under it must stay within 107 bytes."""
    folder = Path(tempfile.mkdtemp(prefix="fcsig-", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _rounds_done(parent: Path) -> int:
    logs = parent.glob("fedcare-flwr-*/result/rounds.jsonl")
    return sum(len(p.read_text().splitlines()) for p in logs)


def _run_args(data_dir: Path, out: Path, backend: str, rounds: int) -> list[str]:
    return [
        "run",
        "--dataset",
        "diabetes130",
        "--data-dir",
        str(data_dir / "diabetes130"),
        *SMALL,
        "--rounds",
        str(rounds),
        "--backend",
        backend,
        "--out",
        str(out),
    ]


@pytest.mark.parametrize(
    ("sig", "group"), [(signal.SIGTERM, False), (signal.SIGINT, True)], ids=["sigterm", "ctrl-c"]
)
def test_a_local_run_ends_with_its_status_and_one_message(data_dir, tmp_path, sig, group):
    out = tmp_path / "results.json"
    cli = Cli([*_run_args(data_dir, out, "local", 100_000), "--quiet"], tmp_path)
    # --quiet prints nothing once loading starts: give Stage 1 a few seconds to be under way.
    time.sleep(8)
    cli.wait_until(lambda: True)
    assert cli.signal(sig, group=group) < 10
    cli.assert_clean_exit(sig)
    assert not out.exists()
    assert cli.processes_left(within_s=2) == []


@pytest.mark.slow
def test_flower_sim_sigterm_stops_ray_without_a_dump(data_dir, tmp_path, short_tmp):
    out = tmp_path / "results.json"
    cli = Cli(_run_args(data_dir, out, "flower-sim", 2000), tmp_path, short_tmp)
    cli.wait_until(lambda: _rounds_done(short_tmp) >= 1)
    assert marked_processes(MARK_ENV, cli.mark), "no Ray process runs"
    assert cli.signal(signal.SIGTERM) < STOP_S
    cli.assert_clean_exit(signal.SIGTERM)
    assert not out.exists()
    assert cli.processes_left() == []


@pytest.mark.slow
def test_flower_sim_sigkill_leaves_no_ray_process(data_dir, tmp_path, short_tmp):
    cli = Cli(_run_args(data_dir, tmp_path / "r.json", "flower-sim", 2000), tmp_path, short_tmp)
    cli.wait_until(lambda: _rounds_done(short_tmp) >= 1)
    assert marked_processes(MARK_ENV, cli.mark), "no Ray process runs"
    cli.signal(signal.SIGKILL)
    # Ray's dashboard and runtime-env agents took over 30 s to notice on their own.
    assert cli.processes_left() == []


@pytest.mark.slow
def test_flower_deployment_sigterm_stops_every_flower_process(data_dir, tmp_path):
    out = tmp_path / "results.json"
    cli = Cli([*_run_args(data_dir, out, "flower-deployment", 2000), "--quiet"], tmp_path)
    cli.wait_until(lambda: _rounds_done(tmp_path) >= 1)
    assert len(marked_processes(MARK_ENV, cli.mark)) > 3, "the federation does not run"
    assert cli.signal(signal.SIGTERM) < STOP_S
    cli.assert_clean_exit(signal.SIGTERM)
    assert not out.exists()
    assert cli.processes_left() == []


def _cells(folder: Path) -> dict[str, float]:
    return {p.name: p.stat().st_mtime for p in folder.glob("cells/*/*.json")}


@pytest.mark.slow
def test_ctrl_c_stops_an_experiment_grid_and_its_workers_write_no_more_cells(data_dir, tmp_path):
    out = tmp_path / "grid"
    args = ["experiment", "comparison", "--data-dir", str(data_dir / "diabetes130")]
    args += ["--no-verify", "--seeds", "20", "--clients", "3", "--rounds", "60"]
    args += ["--max-patients", "2000", "--workers", "2", "--out", str(out)]
    cli = Cli([*args, "--algorithms", "fedavg,local,fedcare"], tmp_path)
    cli.wait_until(lambda: len(_cells(out)) >= 2)
    assert len(marked_processes(MARK_ENV, cli.mark)) >= 2, "no Dask worker runs"
    assert cli.signal(signal.SIGINT, group=True) < STOP_S
    at_exit = _cells(out)
    cli.assert_clean_exit(signal.SIGINT)
    assert cli.processes_left() == []
    time.sleep(5)  # a worker that went on would write its cell by now
    assert _cells(out) == at_exit
    assert not list(out.glob("cells/*/.*.tmp"))  # no half-written document either
