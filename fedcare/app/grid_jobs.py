"""A grid's jobs through the run service, in whatever process runs them.

A job (:class:`~fedcare.experiments.engine.Job`) is one cell, or FedCARE and FedCARE-B
cells of one setting sharing Stage 1. :func:`run_job` prepares the job's federation once and
executes each cell with :func:`fedcare.app.run.execute_run`, its document written by a
:class:`CellDocument` sink; the second cell of a pair is scored from the first's Stage 1. Dask
workers (:mod:`fedcare.grid`) and the experiment flows' ``run-job`` tasks call it;
:func:`run_cells` runs a grid here, one job after another: the reference order, with no cluster.

Each process keeps its loaded dataset (or, for a grid over sites, every site's checked file)
for every job it runs later (a Dask worker is a long-lived process); each job still builds its
federation from its configuration (over sites: its seed's split). Every cell's document equals
``fedcare run``'s (``fedcare run --sites``') for the same configuration apart from ``timing``
(``tests/fedcare/app/test_grid_jobs.py``, ``tests/fedcare/app/test_grid_sites.py``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fedcare.app.run import PreparedRun, execute_run
from fedcare.experiments.cells import Cell
from fedcare.experiments.engine import (
    CellOutcome,
    DataSpec,
    GridRun,
    Job,
    OnDone,
    check_stop,
)
from fedcare_core.config import ExperimentConfig
from fedcare_core.data.loading import LoadedDataset, load_dataset
from fedcare_core.resume.documents import write_document
from fedcare_core.run.pipeline import prepare_federation
from fedcare_core.run.results import DataProvenance

if TYPE_CHECKING:
    from fedcare_core.data.clients import Federation
    from fedcare_core.run.results import ExperimentResult
    from fedcare_core.stage1.types import Stage1Result

_loaded: dict[tuple[str, str | None, bool], LoadedDataset] = {}


def _dataset(config: ExperimentConfig, spec: DataSpec) -> LoadedDataset:
    data = config.data
    key = (
        # Every setting the cohort depends on: two label choices never share a cohort.
        ":".join((data.dataset, *data.label_variants, data.unseen_categories)),
        spec.data_dir,
        spec.verify_checksum,
    )
    if key not in _loaded:
        _loaded[key] = load_dataset(
            config.data, spec.data_dir, verify_checksum=spec.verify_checksum
        )
    return _loaded[key]


def _federation(
    job: Job, base: ExperimentConfig, spec: DataSpec
) -> tuple[Federation, DataProvenance, float]:
    """The job's federation, its provenance and the seconds it took to build.

    Over sites (``spec.sites``): every site's file read once per process, split with the job's
    seed (as ``fedcare run --sites`` does); else the dataset loaded once per process and split
    into the cell's K clients.
    """
    if spec.sites is not None and spec.schema is not None:
        from fedcare.app.sites_in_process import read_sites_files

        read = read_sites_files(spec.schema, spec.sites)  # registers a schema's definition
        t0 = time.perf_counter()
        federation, provenance = read.federation(job.cells[0].seed)
        return federation, provenance, time.perf_counter() - t0
    first = job.cells[0].config(base)
    loaded = _dataset(first, spec)
    t0 = time.perf_counter()
    federation = prepare_federation(loaded.cohort, loaded.partition, first, loaded.source)
    return federation, DataProvenance.of(loaded.cohort), time.perf_counter() - t0


@dataclass(frozen=True)
class CellDocument:
    """Sink: a cell's document, unless the grid was stopped (then nothing is written)."""

    path: Path
    stop: str | None = None

    def write(self, result: ExperimentResult, document: dict[str, Any]) -> None:
        """Write ``document`` to :attr:`path` atomically, after the grid's stop check."""
        check_stop(self.stop)
        write_document(self.path, document)


def run_job(
    job: Job,
    base: ExperimentConfig,
    spec: DataSpec,
    out_dir: str,
    stop: str | None = None,
) -> list[dict[str, Any]]:
    """Run one job and write its cells' documents; returns ``[{"key", "path", "seconds"}]``.

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
        The grid's stop marker (:func:`~fedcare.experiments.engine.stop_marker`), if any.

    Raises
    ------
    Interrupted
        The grid was stopped; the cells not yet written are not written.
    """
    t_start, cpu_start = time.perf_counter(), time.process_time()
    federation, provenance, partition_s = _federation(job, base, spec)
    written: list[dict[str, Any]] = []
    stage1: Stage1Result | None = None  # the first cell's, which the second reuses
    stage1_s: float | None = None
    for i, cell in enumerate(job.cells):
        t3, c3 = time.perf_counter(), time.process_time()
        path = Path(out_dir) / f"{cell.key}.json"
        prepared = PreparedRun(
            cell.config(base), federation, provenance, partition_s, stage1=stage1, stage1_s=stage1_s
        )
        result = execute_run(prepared, sinks=[CellDocument(path, stop)])
        if stage1 is None:
            # A cell that reuses this Stage 1 reports its partition and Stage 1 seconds.
            stage1, stage1_s = result.stage1, result.timing["stage1_s"]
            partition_s = result.timing["partition_s"]
        written.append(
            {
                "key": cell.key,
                "path": str(path),
                "seconds": time.perf_counter() - (t_start if i == 0 else t3),
                "cpu_seconds": time.process_time() - (cpu_start if i == 0 else c3),
            }
        )
    return written


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
    """
    grid = GridRun(cells, out_dir, on_done)
    for job in grid.jobs:
        grid.record(run_job(job, base, spec, str(grid.out)))
    return grid.outcomes()
