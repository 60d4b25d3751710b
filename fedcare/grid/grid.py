"""Run an experiment grid's jobs on a Dask cluster."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from distributed import Client, Future, as_completed

from fedcare.experiments.cells import Cell
from fedcare.experiments.engine import (
    CellOutcome,
    DataSpec,
    GridRun,
    Job,
    OnDone,
    stop_marker,
)
from fedcare_core.config import ExperimentConfig

#: Runs one job on a worker and writes its cells' documents:
#: ``run(job, base, spec, out_dir, stop_marker) → [{"key", "path", "seconds"}]``
#: (:func:`fedcare.app.grid_jobs.run_job`, the run service's). A module-level function: Dask
#: sends it to the workers by name.
JobRunner = Callable[[Job, ExperimentConfig, DataSpec, str, str], list[dict[str, Any]]]


def _job_key(job: Job, token: str) -> str:
    """The Dask key of one job of one grid run.

    Explicit and unique per run (``token``): Dask would otherwise hash the arguments, and a
    scheduler shared by several grids must never treat one grid's job as another's result.
    The cells' keys make the job readable on the dashboard.
    """
    return f"fedcare-job-{'+'.join(c.key for c in job.cells)}-{token}"


def run_grid(
    cells: Sequence[Cell],
    base: ExperimentConfig,
    spec: DataSpec,
    out_dir: str | Path,
    client: Client,
    run_job: JobRunner,
    *,
    on_done: OnDone | None = None,
) -> list[CellOutcome]:
    """Run every cell on the client's cluster (skipping those already written).

    Each job (one cell, or FedCARE and FedCARE-B sharing Stage 1) is one Dask task calling
    ``run_job``; they are submitted longest first, with
    falling priorities, so the scheduler starts them in that order as workers free up.

    Parameters
    ----------
    cells
        The grid (duplicates by key are run once).
    base
        The configuration every cell starts from.
    spec
        Where the dataset is (made absolute: each worker reads it itself).
    out_dir
        Folder for one ``<key>.json`` per cell; on a cluster across machines, a folder every
        worker and this process reach at the same path.
    client
        A client of the cluster (:func:`fedcare.grid.grid_client`).
    run_job
        What runs one job (:data:`JobRunner`): the application's run service.
    on_done
        Called as ``on_done(outcome, done, total)`` after each cell, as results arrive.

    Returns
    -------
    list[CellOutcome]
        One per unique cell, in the order given; equal documents to
        :func:`~fedcare.app.grid_jobs.run_cells`.

    Raises
    ------
    Exception
        The first failed job's error (or a KeyboardInterrupt); the jobs not yet finished are
        cancelled first, and the grid's stop marker (``<out>/.stop-<token>``, left in place for
        jobs still running elsewhere) keeps any from writing another cell. Documents are written
        atomically, so none is half-written.
    """
    grid = GridRun(cells, out_dir, on_done)
    spec = spec.resolved()
    token = uuid.uuid4().hex[:12]
    stop = stop_marker(grid.out, token)
    futures: list[Future] = []
    try:
        for i, job in enumerate(grid.jobs):
            futures.append(
                client.submit(
                    run_job,
                    job,
                    base,
                    spec,
                    str(grid.out),
                    str(stop),
                    key=_job_key(job, token),
                    pure=False,
                    priority=len(grid.jobs) - i,
                )
            )
        # The client is not Dask's default (grid_client), so its loop is named.
        for future in as_completed(futures, loop=client.loop):
            grid.record(future.result())
    except BaseException:
        # The marker first: a job still running (a Dask task cannot be interrupted; on a
        # cluster we did not start it runs on) then writes no further cell. A job still queued
        # would otherwise start after the error.
        stop.touch()
        client.cancel(futures)
        raise
    return grid.outcomes()
