"""Tasks of the experiment flows: run one job of a grid, log an experiment to MLflow."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.runtime import task_run as runtime_task_run

from fedcare.app.grid_jobs import run_job
from fedcare.experiments.engine import DataSpec, Job
from fedcare.tracking import store
from fedcare.tracking.experiment_log import ExperimentOutputs, log_experiment_run
from fedcare_core.config import ExperimentConfig


def _job_run_name() -> str:
    """A job's task run is named after its cells (``fedcare`` and ``fedcare-b`` for a pair)."""
    job = runtime_task_run.parameters["job"]
    return "+".join(cell.key for cell in job.cells)


# No retries: a job is the maths (a failed run is a result to look at, not an I/O hiccup).
@task(
    name="run-job",
    task_run_name=_job_run_name,
    cache_policy=NO_CACHE,
    persist_result=False,
)
def run_job_task(
    job: Job, base: ExperimentConfig, spec: DataSpec, out_dir: str
) -> list[dict[str, Any]]:
    """One job of a grid on a Dask worker: :func:`~fedcare.app.grid_jobs.run_job`.

    Parameters
    ----------
    job
        One cell, or FedCARE and FedCARE-B cells of one setting (Stage 1 run once).
    base
        The configuration every cell starts from.
    spec
        Where the dataset is (an absolute path: the worker reads it itself).
    out_dir
        The cells' documents folder (absolute, reachable by every worker).

    Returns
    -------
    list[dict[str, Any]]
        ``run_job``'s rows: each cell's key, document path and seconds.
    """
    return run_job(job, base, spec, out_dir)


@task(name="log-experiment", cache_policy=NO_CACHE, persist_result=False, retries=2)
def log_experiment_task(
    outputs: ExperimentOutputs,
    tracking_uri: str | None,
    dataset: str,
    params: Mapping[str, str],
    tags: Mapping[str, str],
    run_name: str | None,
) -> tuple[str, str]:
    """One MLflow parent run for the experiment; returns (tracking URI, run id)."""
    uri = store.configure(tracking_uri)
    run_id = log_experiment_run(
        outputs, dataset=dataset, params=params, tags=tags, run_name=run_name
    )
    return uri, run_id
