"""A grid on a real ``dask scheduler`` with two ``dask worker`` processes = on a local cluster."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import psutil
import pytest
from distributed import Client

from fedcare.cli.main import main as fedcare
from fedcare.grid import LOOPBACK
from fedcare.procs.marked import marked_processes, terminate_marked
from fedcare.procs.ports import free_port, port_open
from tests.conftest import REPO_ROOT

MARK = "FEDCARE_DASK_TEST_MARK"
#: Seconds the scheduler and workers get to come up (the machine is shared).
START_S = 120
#: Every method, two seeds, on a small cohort: a minute or two on two cores.
GRID = ["--seeds", "2", "--rounds", "3", "--max-patients", "3000", "--clients", "3"]
GRID += ["--stage2-epochs", "3", "--quiet"]


def _spawn(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    dask = str(Path(sys.executable).with_name("dask"))
    with log.open("wb") as out:
        return subprocess.Popen([dask, *args], env=env, stdout=out, stderr=subprocess.STDOUT)


@pytest.fixture
def loopback_cluster(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A real scheduler and two one-thread workers on 127.0.0.1; every process ended after."""
    token = uuid.uuid4().hex
    path = os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p)
    # The workers import the project from this tree and carry the marker, so the sweep below
    # finds every process they start (nannies and their worker processes) however the test ends.
    env = {**os.environ, "PYTHONPATH": path, MARK: token, "DO_NOT_TRACK": "1"}
    port = free_port()
    address = f"tcp://{LOOPBACK}:{port}"
    loopback_http = ["--dashboard-address", f"{LOOPBACK}:0"]
    scheduler = ["scheduler", "--host", LOOPBACK, "--port", str(port), *loopback_http]
    procs: list[subprocess.Popen[bytes]] = []
    try:
        procs.append(_spawn(scheduler, env, tmp_path / "scheduler.log"))
        deadline = time.monotonic() + START_S
        while not port_open(port):
            assert time.monotonic() < deadline, (tmp_path / "scheduler.log").read_text()
            time.sleep(0.2)
        for i in range(2):
            worker = ["worker", address, "--host", LOOPBACK, "--nthreads", "1", "--nworkers", "1"]
            worker += ["--name", f"w{i}", "--no-dashboard", *loopback_http]
            procs.append(_spawn(worker, env, tmp_path / f"worker{i}.log"))
        with Client(address, set_as_default=False) as client:
            client.wait_for_workers(2, timeout=START_S)
        yield address, token
    finally:
        # Workers first, each closing its own worker process (so nothing is left to init), then
        # the scheduler; then a sweep for anything still carrying the marker.
        for proc in reversed(procs):
            proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=20)
        terminate_marked(MARK, token, grace_s=10)
        for proc in procs:
            proc.wait(timeout=10)
        assert marked_processes(MARK, token) == []


def _listening(token: str) -> set[str]:
    pids = set(marked_processes(MARK, token))
    return {
        c.laddr.ip
        for c in psutil.net_connections(kind="inet")
        if c.status == psutil.CONN_LISTEN and c.pid in pids
    }


def _runs(out: Path) -> pd.DataFrame:
    return pd.read_csv(out / "comparison" / "comparison_runs.csv").drop(columns=["seconds"])


@pytest.mark.slow
@pytest.mark.realdata
def test_a_grid_on_a_real_two_worker_scheduler_equals_the_local_cluster(
    loopback_cluster: tuple[str, str], data_dir: Path, tmp_path: Path
) -> None:
    address, token = loopback_cluster
    assert _listening(token) == {LOOPBACK}  # scheduler, nannies, workers: loopback only
    common = ["experiment", "comparison", "--data-dir", str(data_dir), *GRID]
    assert fedcare([*common, "--dask-address", address, "--out", str(tmp_path / "remote")]) == 0
    assert fedcare([*common, "--workers", "2", "--out", str(tmp_path / "local")]) == 0

    remote, local = _runs(tmp_path / "remote"), _runs(tmp_path / "local")
    assert len(remote) == 9 * 2
    pd.testing.assert_frame_equal(remote, local)
    timing = json.loads((tmp_path / "remote" / "timing_comparison.json").read_text())
    assert timing["workers"] == 2 and timing["dask_address"] == address
    assert timing["experiments"]["comparison"]["ran"] == 18
    # Both workers ran jobs, and each holds the one dataset it loaded.
    with Client(address, set_as_default=False) as client:
        cached = client.run(_cached_datasets)
    assert len(cached) == 2 and set(cached.values()) == {1}


def _cached_datasets() -> int:
    """Run on a worker: how many datasets its process has loaded and kept."""
    from fedcare.app import grid_jobs

    return len(grid_jobs._loaded)
