"""The Dask layer: a grid on two local workers writes the in-process reference's documents."""

from __future__ import annotations

import json
import logging
import os
import time
import uuid
from collections import Counter
from multiprocessing import resource_tracker
from pathlib import Path
from typing import Any

import psutil
import pytest

from fedcare.app.grid_jobs import run_cells, run_job
from fedcare.experiments.cells import Cell
from fedcare.experiments.engine import DataSpec, plan_jobs
from fedcare.grid import LOOPBACK, cluster_workers, grid_client, local_cluster_kwargs, run_grid
from fedcare.grid.cluster import INTERRUPT_QUIET_LOGGERS
from fedcare.procs.marked import marked_processes
from fedcare_core.errors import ConfigError, DataError
from tests.fedcare.experiments.grid_fixtures import BASE
from tests.fedcare.experiments.grid_fixtures import CELLS as GRID_CELLS

#: Four jobs (two FedCARE / FedCARE-B pairs, two FedAvg runs) for two workers.
CELLS = [*GRID_CELLS, Cell("fedavg", 1, 3)]
MARK = "FEDCARE_GRID_TEST_MARK"


class _Records(logging.Handler):
    """Every record a logger it is added to lets through."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.interrupted_at = float("inf")

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _documents(out: Path) -> dict[str, Any]:
    """Every document in ``out`` without its timings (the only part that may differ)."""
    docs = {}
    for path in sorted(out.glob("*.json")):
        doc = json.loads(path.read_text())
        docs[path.stem] = {k: v for k, v in doc.items() if k != "timing"}
    return docs


def _count_loads(record: str) -> None:
    """Run on each worker: append the worker's PID to ``record`` whenever it loads a dataset."""
    from fedcare.app import grid_jobs as engine

    original = engine.load_dataset

    def counted(*args: Any, **kwargs: Any) -> Any:
        with open(record, "a") as f:
            f.write(f"{os.getpid()}\n")
        return original(*args, **kwargs)

    engine.load_dataset = counted  # type: ignore[assignment]


def test_a_two_worker_grid_writes_the_reference_documents_and_loads_once_per_worker(
    tmp_path: Path, data_dir: Path
) -> None:
    spec = DataSpec(str(data_dir))
    reference = run_cells(CELLS, BASE, spec, tmp_path / "reference")
    record = tmp_path / "loads.txt"
    seen: list[tuple[str, int, int]] = []
    with grid_client(workers=2) as client:
        assert cluster_workers(client) == 2
        client.run(_count_loads, str(record))
        outcomes = run_grid(
            CELLS,
            BASE,
            spec,
            tmp_path / "dask",
            client,
            run_job,
            on_done=lambda o, done, total: seen.append((o.cell.key, done, total)),
        )
    assert [o.cell for o in outcomes] == CELLS == [o.cell for o in reference]
    assert all(o.path.is_absolute() and not o.skipped for o in outcomes)
    assert _documents(tmp_path / "dask") == _documents(tmp_path / "reference")
    assert len(_documents(tmp_path / "dask")) == len(CELLS)
    assert sorted(k for k, _, _ in seen) == sorted(c.key for c in CELLS)
    assert [(d, t) for _, d, t in seen] == [(i, len(CELLS)) for i in range(1, len(CELLS) + 1)]
    # One load per worker process however many jobs it ran (4 jobs, 2 workers).
    loads = Counter(record.read_text().split())
    assert len(plan_jobs(CELLS)) == 4
    assert 1 <= len(loads) <= 2 and set(loads.values()) == {1}


def test_written_cells_are_not_submitted_again(tmp_path: Path, data_dir: Path) -> None:
    spec = DataSpec(str(data_dir))
    first = run_cells(CELLS[:2], BASE, spec, tmp_path)
    stamp = [o.path.stat().st_mtime_ns for o in first]
    seen: list[str] = []
    with grid_client(workers=1) as client:
        again = run_grid(
            CELLS[:2],
            BASE,
            spec,
            tmp_path,
            client,
            run_job,
            on_done=lambda o, d, n: seen.append(o.cell.key),
        )
        assert client.who_has() == {}  # nothing was submitted
    assert all(o.skipped for o in again) and not seen
    assert [o.path.stat().st_mtime_ns for o in again] == stamp


def test_a_failing_job_raises_its_error_and_leaves_no_document(tmp_path: Path) -> None:
    spec = DataSpec(str(tmp_path / "missing"))
    with grid_client(workers=2) as client, pytest.raises(DataError, match="path does not exist"):
        run_grid(CELLS, BASE, spec, tmp_path / "out", client, run_job)
    assert not list((tmp_path / "out").glob("*.json"))


def test_an_interrupt_cancels_the_grid_and_stops_every_worker(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = uuid.uuid4().hex
    # This process's own multiprocessing helper, started before the marker: not the grid's.
    resource_tracker.ensure_running()
    monkeypatch.setenv(MARK, token)  # inherited by the cluster's worker processes

    def interrupt(*_: Any) -> None:
        heard.interrupted_at = time.time()
        raise KeyboardInterrupt

    out = tmp_path / "out"
    heard = _Records()
    with pytest.raises(KeyboardInterrupt), grid_client(workers=2) as client:
        assert len(marked_processes(MARK, token)) >= 2
        for name in INTERRUPT_QUIET_LOGGERS:
            logging.getLogger(name).addHandler(heard)
        run_grid(CELLS, BASE, DataSpec(str(data_dir)), out, client, run_job, on_done=interrupt)
    for name in INTERRUPT_QUIET_LOGGERS:
        logging.getLogger(name).removeHandler(heard)
    # The scheduler's complaints about the killed workers' comms (one with its traceback, at
    # INFO) are not printed; the cancellation's own INFO lines may be.
    after = [r for r in heard.records if r.created >= heard.interrupted_at]
    assert [r for r in after if r.exc_info or r.levelno >= logging.WARNING] == []
    assert not [r for r in after if "closed" in r.getMessage().lower()]
    assert logging.getLogger("distributed").level < logging.CRITICAL  # and levels come back
    assert marked_processes(MARK, token) == []
    written = sorted(out.glob("*.json"))
    assert 1 <= len(written) < len(CELLS)
    time.sleep(1.0)
    assert sorted(out.glob("*.json")) == written  # no worker left writing cells


def test_a_local_cluster_listens_on_loopback_only() -> None:
    me = psutil.Process()
    with grid_client(workers=1) as client:
        pids = {me.pid} | {p.pid for p in me.children(recursive=True)}
        listening = [
            c.laddr
            for c in psutil.net_connections(kind="inet")
            if c.status == psutil.CONN_LISTEN and c.pid in pids
        ]
        assert client.scheduler is not None
        assert client.scheduler.address.startswith(f"tcp://{LOOPBACK}:")
    # Scheduler, its HTTP server, the nanny and the worker at least.
    assert len(listening) >= 4
    assert {addr.ip for addr in listening} == {LOOPBACK}


def test_a_local_cluster_leaves_this_processs_environment_as_it_was(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    before = dict(os.environ)
    with grid_client(workers=1) as client:
        # The worker got the nanny's one-thread settings; this process did not keep them.
        worker_env = client.run(lambda: os.environ.get("OMP_NUM_THREADS"))
        assert list(worker_env.values()) == ["1"]
        assert dict(os.environ) == before
    assert dict(os.environ) == before


def test_options_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="workers must be ≥ 1"):
        local_cluster_kwargs(0)
    assert local_cluster_kwargs(3)["n_workers"] == 3
    assert local_cluster_kwargs()["n_workers"] == (os.cpu_count() or 1)
    with pytest.raises(ConfigError, match="own workers"), grid_client("tcp://127.0.0.1:1", 2):
        pass
    monkeypatch.setattr("fedcare.grid.cluster.CONNECT_TIMEOUT_S", 1)
    with (
        pytest.raises(ConfigError, match="no Dask scheduler answers"),
        grid_client("tcp://127.0.0.1:1"),
    ):
        pass
