"""The paper's experiments as Prefect flows, one per experiment (paper §V, SPEC §3–4).

``fedcare-comparison`` (Tables III–V, Fig. 3–4), ``fedcare-clients`` (Fig. 5),
``fedcare-disparity`` (Fig. 6–7), ``fedcare-ablation`` (λ* solver, normalisation, QP scope) and
``fedcare-privacy`` (the privacy–utility trade-off under client-level DP) share one body: the raw
tables are checked (Great Expectations) before any training, the grid runs as the
``fedcare-grid`` subflow, the tables and figures are written, and the experiment is logged as
one MLflow parent run with a nested run per setting and every table and figure as an
artifact. A failed check or run stops the flow before anything is logged to MLflow.

The grid's jobs are Prefect tasks (``run-job``, one per job: one cell, or FedCARE and FedCARE-B
sharing Stage 1) on ``prefect-dask``'s ``DaskTaskRunner``: a local cluster of ``workers``
processes on loopback, or the existing cluster at ``dask_address``. The runner is chosen per flow
run from those parameters (``grid_flow.with_options(task_runner=...)``), so a deployment run can
name a cluster. The documents are the CLI's (``fedcare experiment``): the same
:func:`~fedcare_core.experiments.engine.run_job`, the same per-cell files, resumable.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger
from prefect.futures import as_completed
from prefect.runtime import flow_run as runtime_flow_run
from prefect.states import State
from prefect.task_runners import TaskRunner
from prefect_dask.task_runners import DaskTaskRunner, PrefectDaskFuture

import fedcare.tracking  # noqa: F401  (MLflow telemetry off before mlflow is imported)
from fedcare.grid import local_cluster_kwargs
from fedcare.grid.cluster import check_address
from fedcare_core import __version__
from fedcare_core.algorithms import get_algorithm
from fedcare_core.config import ExperimentConfig
from fedcare_core.errors import ConfigError, FedcareError
from fedcare_core.experiments.cells import (
    ABLATIONS,
    DISPARITY_RATIOS,
    PRIVACY_BUDGETS,
    Cell,
    check_grid,
    experiment_cells,
    grid_base,
)
from fedcare_core.experiments.engine import (
    CellOutcome,
    DataSpec,
    GridRun,
    base_fingerprint,
    cell_store,
)
from fedcare_core.output_paths import check_output_dir
from flows.flow_parameters import expected_failure
from flows.parameter_docs import EXPERIMENT_PARAMETERS, document_parameters
from tasks.data import load_dataset_task, validate_raw_task
from tasks.experiments import log_experiment_task, run_job_task, write_outputs_task

#: Default output folder, relative to the flow run's working directory (the project).
DEFAULT_OUT = ".experiments"


# TaskRunner[Any]: prefect-dask 0.3.7 subclasses the bare TaskRunner, whose future type then
# defaults to PrefectConcurrentFuture, which Flow.with_options' annotation does not accept.
def grid_task_runner(dask_address: str | None, workers: int | None) -> TaskRunner[Any]:
    """A grid's ``DaskTaskRunner``: the cluster at ``dask_address``, or a local cluster.

    Parameters
    ----------
    dask_address
        An existing scheduler, e.g. ``tcp://10.0.0.5:8786`` (None: a local cluster).
    workers
        Worker processes of the local cluster (None: one per core), on loopback, one thread
        each (:func:`fedcare.grid.local_cluster_kwargs`).

    Raises
    ------
    ConfigError
        Both given (an existing cluster has its own workers), ``workers`` below 1, or an
        address not of Dask's form.
    """
    if dask_address is not None:
        if workers is not None:
            raise ConfigError(
                f"workers sizes the local cluster; the cluster at {dask_address} has its own"
            )
        return DaskTaskRunner(address=check_address(dask_address, "dask_address"))
    return DaskTaskRunner(cluster_kwargs=local_cluster_kwargs(workers))


@flow(name="fedcare-grid", validate_parameters=False, persist_result=False)
def grid_flow(
    cells: list[Cell], base: ExperimentConfig, spec: DataSpec, cells_dir: str
) -> list[CellOutcome]:
    """Run a grid's unwritten jobs as ``run-job`` tasks on this flow run's (Dask) task runner.

    Jobs are submitted longest first (the scheduler starts them in that order); each cell is
    logged as it arrives. On the first failure the jobs not yet finished are cancelled and the
    error is raised; leaving the flow closes a local cluster the runner started.
    """
    logger = get_run_logger()

    def say(outcome: CellOutcome, done: int, total: int) -> None:
        logger.info("%d/%d %s: %.1f s", done, total, outcome.cell.key, outcome.seconds)

    grid = GridRun(cells, cells_dir, say)
    spec = spec.resolved()
    futures = [run_job_task.submit(job, base, spec, str(grid.out)) for job in grid.jobs]
    try:
        for future in as_completed(futures):
            grid.record(future.result())
    except BaseException:
        for pending in futures:
            if isinstance(pending, PrefectDaskFuture):
                pending.wrapped_future.cancel()
        raise
    return grid.outcomes()


def run_experiment_flow(
    experiment: str,
    /,
    *,
    dataset: str,
    data_dir: str | None,
    seeds: int,
    clients: int = 10,
    counts: list[int] | None = None,
    ratios: list[float] | None = None,
    algorithms: list[str] | None = None,
    variants: list[str] | None = None,
    budgets: list[float | None] | None = None,
    rounds: int | None = None,
    max_patients: int | None = None,
    stage2_epochs: int | None = None,
    workers: int | None = None,
    dask_address: str | None = None,
    out_dir: str | None = None,
    tracking_uri: str | None = None,
    verify_checksum: bool = True,
) -> dict[str, Any] | State:
    """The body every experiment flow runs (see the module docstring).

    Each flow passes its own parameters through (``**locals()`` first thing in its body), so a
    flow's signature is the one place its parameters and defaults are written. An expected
    error (bad parameters, a failed data check) ends the flow run ``Failed`` with its one-line
    message and no traceback (:func:`~flows.flow_parameters.expected_failure`).
    """
    parameters = dict(locals())
    del parameters["experiment"]
    try:
        return _experiment(experiment, **parameters)
    except FedcareError as exc:
        return expected_failure(exc)


def check_experiment(
    experiment: str,
    dataset: str,
    seeds: int,
    clients: int,
    workers: int | None,
    grid: dict[str, Any],
    out: Path,
) -> tuple[ExperimentConfig, list[Cell]]:
    """Check the parameters, the whole grid and the output folder before any work.

    Returns
    -------
    tuple
        The grid's base configuration and its cells.

    Raises
    ------
    ConfigError
        Naming the parameter (or the grid cell and parameter) at fault.
    """
    for name, value in (("seeds", seeds), ("clients", clients), ("workers", workers)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise ConfigError(f"{name} must be an integer, got {value!r}")
        if value is not None and value < 1:
            raise ConfigError(f"{name} must be ≥ 1, got {value}")
    try:
        for algorithm in grid["algorithms"] or []:
            get_algorithm(algorithm)
    except ConfigError as exc:
        raise ConfigError(f"algorithms: {exc}") from None
    base = grid_base(
        dataset,
        rounds=grid["rounds"],
        max_patients=grid["max_patients"],
        stage2_epochs=grid["stage2_epochs"],
    )
    cells = experiment_cells(
        experiment,
        seeds,
        clients=clients,
        counts=grid["counts"],
        ratios=grid["ratios"] or list(DISPARITY_RATIOS),
        algorithms=grid["algorithms"],
        variants=grid["variants"] or list(ABLATIONS),
        budgets=list(PRIVACY_BUDGETS) if grid.get("budgets") is None else grid["budgets"],
    )
    check_grid(cells, base)
    check_output_dir(out, what="out_dir")
    return base, cells


def _experiment(
    experiment: str,
    /,
    *,
    dataset: str,
    data_dir: str | None,
    seeds: int,
    clients: int,
    counts: list[int] | None,
    ratios: list[float] | None,
    algorithms: list[str] | None,
    variants: list[str] | None,
    budgets: list[float | None] | None,
    rounds: int | None,
    max_patients: int | None,
    stage2_epochs: int | None,
    workers: int | None,
    dask_address: str | None,
    out_dir: str | None,
    tracking_uri: str | None,
    verify_checksum: bool,
) -> dict[str, Any]:
    """:func:`run_experiment_flow`'s work."""
    logger = get_run_logger()
    out = Path(out_dir or DEFAULT_OUT) / dataset
    grid = {
        "counts": counts,
        "ratios": ratios,
        "algorithms": algorithms,
        "variants": variants,
        "budgets": budgets,
        "rounds": rounds,
        "max_patients": max_patients,
        "stage2_epochs": stage2_epochs,
    }
    base, cells = check_experiment(experiment, dataset, seeds, clients, workers, grid, out)
    runner = grid_task_runner(dask_address, workers)
    cells_dir = cell_store(out, base)
    flow_run_id = str(runtime_flow_run.id)
    # Fails the task (and the flow) with the line `fedcare experiment` prints for the data.
    validate_raw_task(base.data, data_dir, out / "validation" / flow_run_id, verify_checksum)
    # The loader's own checks too, once, before any cell (as `fedcare experiment` does).
    load_dataset_task(base, data_dir, verify_checksum)
    spec = DataSpec(data_dir or os.environ.get("FEDCARE_DATA_DIR"), verify_checksum)
    outcomes = grid_flow.with_options(task_runner=runner)(cells, base, spec, str(cells_dir))
    outputs = write_outputs_task(experiment, cells, cells_dir, out / experiment, dataset)
    params = {
        "experiment": experiment,
        "dataset": dataset,
        "seeds": str(seeds),
        "cells": str(len(outcomes)),
        "rounds": str(base.stage1.rounds),
        "base_fingerprint": base_fingerprint(base),
        "workers": str(workers or os.cpu_count() or 1) if dask_address is None else "cluster",
        "dask_address": dask_address or "local",
    }
    uri, run_id = log_experiment_task(
        outputs,
        tracking_uri,
        dataset,
        params,
        {"prefect.flow_run_id": flow_run_id, "fedcare.version": __version__},
        f"{experiment}-{runtime_flow_run.name}",
    )
    logger.info("%s: %d runs; MLflow run %s (%s)", experiment, len(outcomes), run_id, uri)
    return {
        "experiment": experiment,
        "runs": len(outcomes),
        "ran": sum(not o.skipped for o in outcomes),
        "files": [str(p) for p in outputs.files],
        "mlflow_run_id": run_id,
        "tracking_uri": uri,
    }


@flow(name="fedcare-comparison", validate_parameters=True)
@document_parameters(EXPERIMENT_PARAMETERS)
def comparison_flow(
    dataset: str = "diabetes130",
    data_dir: str | None = None,
    seeds: int = 10,
    clients: int = 10,
    algorithms: list[str] | None = None,
    rounds: int | None = None,
    max_patients: int | None = None,
    stage2_epochs: int | None = None,
    workers: int | None = None,
    dask_address: str | None = None,
    out_dir: str | None = None,
    tracking_uri: str | None = None,
    verify_checksum: bool = True,
) -> dict[str, Any] | State:
    """Every algorithm × seeds at K clients (paper Tables III–V, Fig. 3–4)."""
    return run_experiment_flow("comparison", **locals())


@flow(name="fedcare-clients", validate_parameters=True)
@document_parameters(EXPERIMENT_PARAMETERS)
def clients_flow(
    dataset: str = "diabetes130",
    data_dir: str | None = None,
    seeds: int = 10,
    counts: list[int] | None = None,
    algorithms: list[str] | None = None,
    rounds: int | None = None,
    max_patients: int | None = None,
    stage2_epochs: int | None = None,
    workers: int | None = None,
    dask_address: str | None = None,
    out_dir: str | None = None,
    tracking_uri: str | None = None,
    verify_checksum: bool = True,
) -> dict[str, Any] | State:
    """The algorithms at K ∈ counts (paper Fig. 5)."""
    return run_experiment_flow("clients", **locals())


@flow(name="fedcare-disparity", validate_parameters=True)
@document_parameters(EXPERIMENT_PARAMETERS)
def disparity_flow(
    dataset: str = "diabetes130",
    data_dir: str | None = None,
    seeds: int = 10,
    clients: int = 10,
    ratios: list[float] | None = None,
    rounds: int | None = None,
    max_patients: int | None = None,
    stage2_epochs: int | None = None,
    workers: int | None = None,
    dask_address: str | None = None,
    out_dir: str | None = None,
    tracking_uri: str | None = None,
    verify_checksum: bool = True,
) -> dict[str, Any] | State:
    """FedCARE against FedCARE-B at ρ ∈ ratios (paper Fig. 6–7)."""
    return run_experiment_flow("disparity", **locals())


@flow(name="fedcare-ablation", validate_parameters=True)
@document_parameters(EXPERIMENT_PARAMETERS)
def ablation_flow(
    dataset: str = "diabetes130",
    data_dir: str | None = None,
    seeds: int = 10,
    clients: int = 10,
    variants: list[str] | None = None,
    rounds: int | None = None,
    max_patients: int | None = None,
    stage2_epochs: int | None = None,
    workers: int | None = None,
    dask_address: str | None = None,
    out_dir: str | None = None,
    tracking_uri: str | None = None,
    verify_checksum: bool = True,
) -> dict[str, Any] | State:
    """λ* solver, gradient normalisation and QP scope, FedCARE and FedCARE-B."""
    return run_experiment_flow("ablation", **locals())


@flow(name="fedcare-privacy", validate_parameters=True)
@document_parameters(EXPERIMENT_PARAMETERS)
def privacy_flow(
    dataset: str = "diabetes130",
    data_dir: str | None = None,
    seeds: int = 10,
    counts: list[int] | None = None,
    budgets: list[float | None] | None = None,
    algorithms: list[str] | None = None,
    rounds: int | None = None,
    max_patients: int | None = None,
    stage2_epochs: int | None = None,
    workers: int | None = None,
    dask_address: str | None = None,
    out_dir: str | None = None,
    tracking_uri: str | None = None,
    verify_checksum: bool = True,
) -> dict[str, Any] | State:
    """The privacy–utility trade-off: FedCARE, FedCARE-B and FedAvg at each client-level ε."""
    return run_experiment_flow("privacy", **locals())
