"""Every experiment of ``fedcare experiment`` as a Prefect flow (paper §V, SPEC §3–4).

``fedcare-comparison`` (Tables III–V, Fig. 3–4), ``fedcare-clients`` (Fig. 5),
``fedcare-disparity`` (Fig. 6–7), ``fedcare-ablation``, ``fedcare-privacy``,
``fedcare-selection``, ``fedcare-recommended``, ``fedcare-preferences`` and
``fedcare-programme`` (the comparison, the client sweep and the disparity sweep) are made by
:func:`experiment_flow` from the grid options' declarations (:mod:`fedcare.app.grid_options`):
each flow's parameters are the options its experiment uses, with their descriptions in Prefect's
UI, and its body calls the grid service (:mod:`fedcare.app.grid`), as ``fedcare experiment``
does. The raw tables are checked (Great Expectations) before any training, the grid runs as the
``fedcare-grid`` subflow, the tables and figures are written (the report also as a Prefect
artifact), and each experiment is logged as one MLflow parent run. A failed check or run stops
the flow before anything is logged.

The grid's jobs are Prefect tasks (``run-job``, one per job: one cell, or FedCARE and FedCARE-B
sharing Stage 1) on ``prefect-dask``'s ``DaskTaskRunner``: a local cluster of ``workers``
processes on loopback, or the existing cluster at ``dask_address``, chosen per flow run
(``grid_flow.with_options(task_runner=...)``). The documents are the CLI's: the same
:func:`~fedcare.app.grid_jobs.run_job`, the same per-cell files, resumable.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefect import Flow, flow, get_run_logger
from prefect.futures import as_completed
from prefect.runtime import flow_run as runtime_flow_run
from prefect.states import State
from prefect.task_runners import TaskRunner
from prefect_dask.task_runners import DaskTaskRunner, PrefectDaskFuture

import fedcare.tracking  # noqa: F401  (MLflow telemetry off before mlflow is imported)
from fedcare.app.grid import (
    GridRequest,
    PreparedGrid,
    check_grid_request,
    checked_data,
    flow_spelling,
    run_grid_request,
)
from fedcare.app.grid_options import PROGRAMME_NAME, experiments_of, options_of
from fedcare.experiments.cells import EXPERIMENTS, Cell
from fedcare.experiments.engine import CellOutcome, DataSpec, GridRun, OnDone
from fedcare.grid import local_cluster_kwargs
from fedcare.grid.cluster import check_address
from fedcare.tracking.experiment_log import ExperimentOutputs
from fedcare_core import __version__
from fedcare_core.config import ExperimentConfig
from fedcare_core.errors import ConfigError, FedcareError
from flows.flow_parameters import expected_failure
from flows.parameter_docs import google_args_section
from tasks.artifacts import keep_markdown_artifact
from tasks.data import load_dataset_task, validate_raw_task
from tasks.experiments import log_experiment_task, run_job_task


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
        Both given (an existing cluster has its own workers), or an address not of Dask's form.
    """
    if dask_address is not None:
        if workers is not None:
            raise ConfigError(
                f"workers sizes the local cluster; the cluster at {dask_address} has its own"
            )
        return DaskTaskRunner(address=check_address(dask_address, "dask_address"))
    return DaskTaskRunner(cluster_kwargs=local_cluster_kwargs(workers))


@flow(name="fedcare-grid", validate_parameters=False, persist_result=False)
def _grid_flow(
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


@dataclass(frozen=True)
class PrefectGridExecutor:
    """Runs a grid as the ``fedcare-grid`` subflow on a Dask task runner."""

    runner: TaskRunner[Any]
    workers: int | None

    def run(
        self,
        cells: list[Cell],
        base: ExperimentConfig,
        spec: DataSpec,
        cells_dir: Path,
        on_done: OnDone,
    ) -> list[CellOutcome]:
        """Every cell's outcome (the subflow logs each as it arrives)."""
        return _grid_flow.with_options(task_runner=self.runner)(cells, base, spec, str(cells_dir))


@dataclass(frozen=True)
class _FlowExperimentSink:
    """The report as a Prefect artifact, and one MLflow parent run (a task, retried)."""

    tracking_uri: str | None
    dataset: str

    def record(self, outputs: ExperimentOutputs, params: Mapping[str, str]) -> dict[str, Any]:
        """Publish and log the experiment; its MLflow run id and tracking URI."""
        report = next(p for p in outputs.files if p.suffix == ".md")
        keep_markdown_artifact(  # one per flow run, whatever retries the task or the POST
            f"experiment-{outputs.experiment}",
            report.read_text(),
            f"{outputs.experiment} on {self.dataset}",
        )
        tags = {"prefect.flow_run_id": str(runtime_flow_run.id), "fedcare.version": __version__}
        run_name = f"{outputs.experiment}-{runtime_flow_run.name}"
        uri, run_id = log_experiment_task(
            outputs, self.tracking_uri, self.dataset, params, tags, run_name
        )
        get_run_logger().info("%s: MLflow run %s (%s)", outputs.experiment, run_id, uri)
        return {"mlflow_run_id": run_id, "tracking_uri": uri}


def flow_data_gate(prepared: PreparedGrid) -> None:
    """The raw tables' suites, then the loader's checks, each a task (reports kept).

    Over sites: the grid service's gate (every site's file read and checked, as ``fedcare run
    --sites`` reads it, and split for each seed).
    """
    spec, data = prepared.spec, prepared.base.data
    if spec.sites is not None:
        checked_data(prepared)
        return
    reports = prepared.out / "validation" / str(runtime_flow_run.id)
    # Fails the task (and the flow) with the line `fedcare experiment` prints for the data.
    validate_raw_task(data, spec.data_dir, reports, spec.verify_checksum)
    load_dataset_task(prepared.base, spec.data_dir, spec.verify_checksum)


def _run_grid_flow(name: str, parameters: Mapping[str, Any]) -> dict[str, Any] | State:
    """The body of every experiment flow: the grid service with Prefect's executor and sinks.

    An expected error (bad parameters, a failed data check) ends the flow run ``Failed`` with
    its one-line message and no traceback (:func:`~flows.flow_parameters.expected_failure`).
    """
    by_parameter = {o.flow_parameter: o.name for o in options_of(name)}
    request = GridRequest(name, {by_parameter[k]: v for k, v in parameters.items()})
    try:
        prepared = check_grid_request(request, flow_spelling)
        workers, address = request.value("workers"), request.value("dask_address")
        runner = grid_task_runner(address, workers)
        count = None if address is not None else workers or os.cpu_count() or 1
        report = run_grid_request(
            prepared,
            PrefectGridExecutor(runner, count),
            gate=flow_data_gate,
            sinks=[_FlowExperimentSink(request.value("tracking_uri"), prepared.dataset)],
        )
    except FedcareError as exc:
        return expected_failure(exc)
    experiments = report["experiments"]
    last = experiments[experiments_of(name)[-1]]
    return {
        "experiment": name,
        "runs": sum(e["cells"] for e in experiments.values()),
        "ran": sum(e["ran"] for e in experiments.values()),
        "files": [f for e in experiments.values() for f in e["files"]],
        "mlflow_run_id": last["mlflow_run_id"],
        "tracking_uri": last["tracking_uri"],
        "experiments": experiments,
    }


_SUMMARIES = {
    "comparison": "Every method × seeds at K clients (paper Tables III–V, Fig. 3–4).",
    "clients": "The methods at K ∈ counts (paper Fig. 5).",
    "disparity": "FedCARE against FedCARE-B at ρ ∈ ratios (paper Fig. 6–7).",
    "ablation": "λ* solver, gradient normalisation and QP scope, FedCARE and FedCARE-B.",
    "privacy": "The privacy–utility trade-off: FedCARE, FedCARE-B and FedAvg at each ε.",
    "selection": "The configuration candidates, chosen on validation scores.",
    "recommended": "The recommended configuration against the baselines per setting.",
    "preferences": "The recommended configuration with each clinical preference, and without.",
    PROGRAMME_NAME: "The comparison, the client sweep and the disparity sweep, in turn.",
}


def experiment_flow(name: str) -> Flow[..., Any]:
    """The ``fedcare-<name>`` flow: its parameters the options ``name`` uses, described.

    Parameters
    ----------
    name
        An experiment, or ``programme``.

    Returns
    -------
    Flow
        A flow whose signature lists each option (Prefect builds the deployment's form and
        validates a run's parameters from it) and whose body is :func:`_run_grid_flow`.
    """
    options = options_of(name)
    parameters = [
        inspect.Parameter(
            o.flow_parameter, inspect.Parameter.KEYWORD_ONLY, default=o.default,
            annotation=o.annotation,
        )
        for o in options
    ]  # fmt: skip

    def body(**given: Any) -> dict[str, Any] | State:
        return _run_grid_flow(name, given)

    descriptions = {o.flow_parameter: o.help[:1].upper() + o.help[1:] + "." for o in options}
    body.__name__ = body.__qualname__ = f"{name}_flow"
    body.__module__ = __name__
    body.__doc__ = f"{_SUMMARIES[name]}\n\n{google_args_section(descriptions, list(descriptions))}"
    body.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        parameters, return_annotation=dict[str, Any] | State
    )
    body.__annotations__ = {p.name: p.annotation for p in parameters}
    return flow(name=f"fedcare-{name}", validate_parameters=True)(body)


comparison_flow = experiment_flow("comparison")
clients_flow = experiment_flow("clients")
disparity_flow = experiment_flow("disparity")
ablation_flow = experiment_flow("ablation")
privacy_flow = experiment_flow("privacy")
selection_flow = experiment_flow("selection")
recommended_flow = experiment_flow("recommended")
preferences_flow = experiment_flow("preferences")
programme_flow = experiment_flow(PROGRAMME_NAME)

#: Each experiment's flow (and the programme's), by name.
EXPERIMENT_FLOWS = {name: globals()[f"{name}_flow"] for name in (*EXPERIMENTS, PROGRAMME_NAME)}
