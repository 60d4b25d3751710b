"""The pure pieces of the experiment engine: jobs, their plan and a grid's bookkeeping.

The engine changes where and how often work happens, never what a run computes:

- **Jobs anywhere.** A job (:class:`Job`) is one cell, or FedCARE and FedCARE-B sharing Stage
  1 (FedCARE-B is FedCARE's Stage 1 without Stage 2, so both are scored from one Stage 1). The
  run service runs a job in whatever process it is given (:func:`fedcare.app.grid_jobs.run_job`);
  grids run on Dask (:mod:`fedcare.grid`, and the experiment flows on ``prefect-dask``), the
  longest jobs first (:func:`plan_jobs`) so the cores finish together. This module imports no
  scheduler.
- **Resumable.** Each cell's results document is written atomically to ``<out>/<key>.json``
  (:mod:`fedcare_core.resume.documents`); cells whose file exists are not run again
  (:class:`GridRun`).
- **Stoppable.** A grid's stop marker (:func:`stop_marker`) tells jobs running elsewhere to
  write nothing more (:func:`check_stop`).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from fedcare.experiments.cells import Cell, unique
from fedcare_core.algorithms import get_algorithm
from fedcare_core.run import interrupts


@dataclass(frozen=True)
class DataSpec:
    """Where a worker loads the dataset from: a dataset split into clients, or sites' files.

    Parameters
    ----------
    data_dir
        Dataset folder or file (None: ``FEDCARE_DATA_DIR``).
    verify_checksum
        Check the Diabetes 130 file's published SHA-256.
    sites
        A sites list (``sites.json``): each cell runs over these sites, each prepared from its
        own file against ``schema`` (None: the dataset, split into the cell's K clients).
    schema
        The sites' federation schema (``federation.json``), with ``sites``.
    """

    data_dir: str | None
    verify_checksum: bool = True
    sites: str | None = None
    schema: str | None = None

    def resolved(self) -> DataSpec:
        """The spec with absolute paths (workers resolve a relative one elsewhere)."""

        def absolute(path: str | None) -> str | None:
            return None if path is None else str(Path(path).expanduser().resolve())

        return replace(
            self,
            data_dir=absolute(self.data_dir),
            sites=absolute(self.sites),
            schema=absolute(self.schema),
        )


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
