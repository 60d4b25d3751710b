"""The pure pieces of the experiment engine: jobs, one job's run, resumable bookkeeping.

The engine changes where and how often work happens, never what a run computes:

- **Jobs anywhere.** A job (:class:`Job`) is one cell, or FedCARE and FedCARE-B sharing Stage
  1; :func:`run_job` runs one in whatever process it is called from and writes its documents.
  Grids run on Dask (:mod:`fedcare.grid`, and the experiment flows on ``prefect-dask``): one
  worker process per core with one thread each, the longest jobs first so the cores finish
  together. :func:`run_cells` runs them here, one after another: the reference order, with no
  cluster. This module imports no scheduler.
- **One data load per process.** :func:`_dataset` keeps each process's loaded dataset for every
  job it runs later (a Dask worker is a long-lived process); each cell still builds its own
  federation from its configuration.
- **Shared Stage 1.** FedCARE-B is FedCARE's Stage 1 without Stage 2, so a FedCARE and a
  FedCARE-B cell of the same setting run Stage 1 once and both are scored from it.
- **Resumable.** Each cell's results document is written atomically to ``<out>/<key>.json``;
  cells whose file exists are not run again (:class:`GridRun`).

Every cell's document equals ``run_experiment``'s for the same configuration apart from
``timing`` (tested in ``tests/fedcare_core/experiments/test_engine.py``).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from fedcare_core.algorithms import get_algorithm
from fedcare_core.config import ExperimentConfig
from fedcare_core.data.loading import LoadedDataset, load_dataset
from fedcare_core.experiments.cells import Cell, unique
from fedcare_core.resume.documents import write_document
from fedcare_core.run import interrupts
from fedcare_core.run.pipeline import prepare_federation, run_algorithm
from fedcare_core.run.results import DataProvenance
from fedcare_core.stage1.loop import Stage1Result


@dataclass(frozen=True)
class DataSpec:
    """Where a worker loads the dataset from.

    Parameters
    ----------
    data_dir
        Dataset folder or file (None: ``FEDCARE_DATA_DIR``).
    verify_checksum
        Check the Diabetes 130 file's published SHA-256.
    """

    data_dir: str | None
    verify_checksum: bool = True

    def resolved(self) -> DataSpec:
        """The spec with an absolute ``data_dir`` (workers resolve a relative one elsewhere)."""
        if self.data_dir is None:
            return self
        return replace(self, data_dir=str(Path(self.data_dir).expanduser().resolve()))


@dataclass(frozen=True)
class Job:
    """Cells run together in one process: one cell, or FedCARE and FedCARE-B sharing Stage 1."""

    cells: tuple[Cell, ...]

    @property
    def cost(self) -> float:
        """Estimated relative cost (for longest-first scheduling: ``Algorithm.grid_cost``)."""
        cell = self.cells[0]
        return get_algorithm(cell.algorithm).grid_cost(cell.clients)


@dataclass(frozen=True)
class CellOutcome:
    """A finished cell: where its document is, its wall seconds and its process's CPU seconds.

    A FedCARE / FedCARE-B pair that shared Stage 1 charges Stage 1 to the first of them.
    """

    cell: Cell
    path: Path
    seconds: float
    cpu_seconds: float = 0.0
    skipped: bool = False


def plan_jobs(cells: Sequence[Cell]) -> list[Job]:
    """Group cells into jobs (shared Stage 1), longest first."""
    groups: dict[tuple[Any, ...], list[Cell]] = {}
    for cell in cells:
        groups.setdefault(cell.stage1_key(), []).append(cell)
    jobs: list[Job] = []
    for group in groups.values():
        shared = [c for c in group if get_algorithm(c.algorithm).runs_stage1]
        jobs.extend(Job((c,)) for c in group if c not in shared)
        if shared:
            jobs.append(Job(tuple(shared)))
    return sorted(jobs, key=lambda j: -j.cost)


_loaded: dict[tuple[str, str | None, bool], LoadedDataset] = {}


def _dataset(config: ExperimentConfig, spec: DataSpec) -> LoadedDataset:
    data = config.data
    key = (
        f"{data.dataset}:{data.readmission}:{data.unseen_categories}",
        spec.data_dir,
        spec.verify_checksum,
    )
    if key not in _loaded:
        _loaded[key] = load_dataset(
            config.data, spec.data_dir, verify_checksum=spec.verify_checksum
        )
    return _loaded[key]


def stop_marker(out_dir: str | Path, token: str) -> Path:
    """The file whose existence tells a grid run's jobs (token ``token``) to write nothing more."""
    return Path(out_dir) / f".stop-{token}"


def check_stop(stop: str | None) -> None:
    """Raise :class:`~fedcare_core.run.interrupts.Interrupted` if the grid was stopped.

    Stopped: this process received a stop signal, or the grid's stop marker ``stop`` exists (the
    grid's own process was interrupted; its workers, in other processes or on other machines,
    see the marker in the shared documents folder).
    """
    interrupts.check()
    if stop is not None and os.path.exists(stop):
        raise interrupts.Interrupted(signal.SIGINT)


def run_job(
    job: Job,
    base: ExperimentConfig,
    spec: DataSpec,
    out_dir: str,
    stop: str | None = None,
) -> list[dict[str, Any]]:
    """Run one job and write its cells' documents; returns ``[{"key", "path", "seconds"}]``.

    The job's cells share one federation (they differ in the algorithm only); FedCARE and
    FedCARE-B share the rounds too: the second is scored from the first's Stage 1. Before each
    document is written, :func:`check_stop`: no cell is written once the grid was interrupted.

    Parameters
    ----------
    job
        One cell, or FedCARE and FedCARE-B cells of the same setting (Stage 1 run once).
    base
        The configuration every cell starts from.
    spec
        Where the dataset is.
    out_dir
        Folder for the documents.
    stop
        The grid's stop marker (:func:`stop_marker`), if it has one.

    Raises
    ------
    Interrupted
        The grid was stopped (:func:`check_stop`); the cells not yet written are not written.
    """
    t_start, cpu_start = time.perf_counter(), time.process_time()
    first = job.cells[0].config(base)
    loaded = _dataset(first, spec)
    t0 = time.perf_counter()
    federation = prepare_federation(loaded.cohort, loaded.partition, first, loaded.source)
    timing = {"partition_s": time.perf_counter() - t0}
    provenance = DataProvenance.of(loaded.cohort)
    out = Path(out_dir)
    written: list[dict[str, Any]] = []
    stage1: Stage1Result | None = None  # the first cell's, which the second reuses
    for i, cell in enumerate(job.cells):
        t3, c3 = time.perf_counter(), time.process_time()
        config = cell.config(base)
        result = run_algorithm(
            federation, config, provenance=provenance, stage1=stage1, timing=timing
        )
        if stage1 is None:
            stage1 = result.stage1
            # A cell that reuses this Stage 1 reports its partition and Stage 1 seconds.
            timing = {k: result.timing[k] for k in ("partition_s", "stage1_s")}
        path = out / f"{cell.key}.json"
        check_stop(stop)
        write_document(path, result.to_dict())
        written.append(
            {
                "key": cell.key,
                "path": str(path),
                "seconds": time.perf_counter() - (t_start if i == 0 else t3),
                "cpu_seconds": time.process_time() - (cpu_start if i == 0 else c3),
            }
        )
    return written


OnDone = Callable[[CellOutcome, int, int], None]


class GridRun:
    """The bookkeeping of one grid run, shared by every executor of its jobs.

    Finds the cells whose documents are already written (skipped: an interrupted grid resumes),
    plans the rest as jobs (:func:`plan_jobs`, longest first) and records each job's rows as
    they arrive. The in-process :func:`run_cells` and the Dask layer (:mod:`fedcare.grid`) both
    drive one, so a grid's outcomes do not depend on where its jobs ran.

    Parameters
    ----------
    cells
        The grid (duplicates by key are run once).
    out_dir
        Folder for one ``<key>.json`` per cell (created; made absolute, since workers on other
        processes or machines resolve a relative path against their own working folder).
    on_done
        Called as ``on_done(outcome, done, total)`` after each cell that ran.

    Attributes
    ----------
    out
        The absolute documents folder.
    cells
        The unique cells, in the order given.
    jobs
        The jobs still to run, longest first.
    """

    def __init__(
        self, cells: Sequence[Cell], out_dir: str | Path, on_done: OnDone | None = None
    ) -> None:
        self.out = Path(out_dir).resolve()
        self.out.mkdir(parents=True, exist_ok=True)
        self.cells = unique(cells)
        self._by_key = {c.key: c for c in self.cells}
        self._on_done = on_done
        self._outcomes: dict[str, CellOutcome] = {}
        pending: list[Cell] = []
        for cell in self.cells:
            path = self.out / f"{cell.key}.json"
            if path.is_file():
                self._outcomes[cell.key] = CellOutcome(cell, path, 0.0, skipped=True)
            else:
                pending.append(cell)
        self.jobs = plan_jobs(pending)

    @property
    def total(self) -> int:
        """Number of unique cells in the grid."""
        return len(self.cells)

    def record(self, rows: Sequence[dict[str, Any]]) -> None:
        """Record one finished job's rows (what :func:`run_job` returns) and report each cell."""
        for row in rows:
            outcome = CellOutcome(
                self._by_key[row["key"]],
                Path(row["path"]),
                float(row["seconds"]),
                float(row.get("cpu_seconds", 0.0)),
            )
            self._outcomes[row["key"]] = outcome
            if self._on_done is not None:
                self._on_done(outcome, len(self._outcomes), self.total)

    def outcomes(self) -> list[CellOutcome]:
        """One outcome per unique cell, in the order given (every job must have been recorded).

        Raises
        ------
        KeyError
            A cell whose job was not recorded.
        """
        return [self._outcomes[c.key] for c in self.cells]


def run_cells(
    cells: Sequence[Cell],
    base: ExperimentConfig,
    spec: DataSpec,
    out_dir: str | Path,
    *,
    on_done: OnDone | None = None,
) -> list[CellOutcome]:
    """Run every cell in this process, one job after another (the reference order).

    Grids run on Dask through :func:`fedcare.grid.run_grid`; this sequential path is what its
    documents are tested against, and needs no cluster.

    Parameters
    ----------
    cells
        The grid (duplicates by key are run once).
    base
        The configuration every cell starts from (its algorithm, seed, K and ρ are replaced).
    spec
        Where the dataset is.
    out_dir
        Folder for one ``<key>.json`` per cell (created).
    on_done
        Called as ``on_done(outcome, done, total)`` after each cell.

    Returns
    -------
    list[CellOutcome]
        One per unique cell, in the order given.

    Raises
    ------
    Exception
        The first job's error; no document is half-written.
    """
    grid = GridRun(cells, out_dir, on_done)
    for job in grid.jobs:
        grid.record(run_job(job, base, spec, str(grid.out)))
    return grid.outcomes()
