"""Tracking tasks: the flow run's MLflow parent run, one algorithm × seed run, the registry.

Thin wrappers over :mod:`fedcare.tracking`; they retry on I/O failures (an unreachable tracking
server), since a retried log call only creates a new run, and a run whose logging failed is
marked ``FAILED``, never ``FINISHED``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from prefect import task

import fedcare.tracking  # noqa: F401  (MLflow telemetry off before mlflow is imported)
from fedcare.tracking import links, log_run, store, summary, track
from fedcare.tracking.track import Registrations
from fedcare_core.run.results import ExperimentResult
from tasks.common import IO_RETRIES, IO_RETRY_DELAY_S, NO_CACHE, retry_on_io_error, run_logger

#: Tag naming the step at which a flow run failed (``validation``, ``training``, …).
TAG_FAILED_AT = "fedcare.failed_at"
#: Tag naming how a parent run's flow run ended (``Completed``, ``Failed``).
TAG_FLOW_STATE = "prefect.flow_run_state"
#: Tag with the Prefect flow-run name.
TAG_FLOW_RUN_NAME = "prefect.flow_run_name"


@task(
    name="mlflow-start-parent-run",
    retries=IO_RETRIES,
    retry_delay_seconds=IO_RETRY_DELAY_S,
    retry_condition_fn=retry_on_io_error,
    cache_policy=NO_CACHE,
    persist_result=False,
)
def start_parent_run_task(
    tracking_uri: str | None,
    dataset: str,
    *,
    run_name: str | None,
    tags: Mapping[str, str],
    params: Mapping[str, str],
) -> tuple[str, str]:
    """Point MLflow at the store and create the flow run's parent run.

    Parameters
    ----------
    tracking_uri
        Any MLflow tracking URI (``None``: ``MLFLOW_TRACKING_URI``, else ``./mlflow/mlflow.db``).
    dataset
        Selects the experiment (``fedcare/<dataset>``).
    run_name
        Display name (what the flow run runs, :func:`fedcare.tracking.naming.parent_run_name`;
        the Prefect flow-run id and name go in ``tags``).
    tags, params
        The parent run's tags (Prefect flow-run id, version) and the flow's parameters.

    Returns
    -------
    tuple of str
        The tracking URI in use and the parent run id.
    """
    uri = store.configure(tracking_uri)
    run_id = store.start_parent_run(dataset, run_name=run_name, tags=tags, params=params)
    experiment_id = store.client().get_run(run_id).info.experiment_id
    page = links.run_url(uri, experiment_id, run_id)  # a server's UI, in model-training mode
    run_logger().info("MLflow parent run %s in %s%s", run_id, uri, f" ({page})" if page else "")
    return uri, run_id


@task(
    name="mlflow-log-artifacts",
    retries=IO_RETRIES,
    retry_delay_seconds=IO_RETRY_DELAY_S,
    retry_condition_fn=retry_on_io_error,
    cache_policy=NO_CACHE,
    persist_result=False,
)
def log_artifacts_task(tracking_uri: str, run_id: str, folder: Path, artifact_path: str) -> None:
    """Upload a folder (e.g. a validation report) to a run's artifacts under ``artifact_path``."""
    store.configure(tracking_uri)
    store.client().log_artifacts(run_id, str(folder), artifact_path=artifact_path)


@task(
    name="mlflow-set-tags",
    retries=IO_RETRIES,
    retry_delay_seconds=IO_RETRY_DELAY_S,
    retry_condition_fn=retry_on_io_error,
    cache_policy=NO_CACHE,
    persist_result=False,
)
def set_tags_task(tracking_uri: str, run_id: str, tags: Mapping[str, str]) -> None:
    """Set tags on a run."""
    store.configure(tracking_uri)
    mc = store.client()
    for key, value in tags.items():
        mc.set_tag(run_id, key, value)


@task(
    name="mlflow-log-experiment",
    retries=IO_RETRIES,
    retry_delay_seconds=IO_RETRY_DELAY_S,
    retry_condition_fn=retry_on_io_error,
    cache_policy=NO_CACHE,
    persist_result=False,
)
def log_experiment_task(
    tracking_uri: str,
    result: ExperimentResult,
    *,
    parent_run_id: str,
    flow_run_id: str | None,
    extra_artifacts: Mapping[str, Path],
    backend: str,
    models: bool = True,
) -> str:
    """Log one algorithm × seed run (nested under the parent) and its Stage 2 runs.

    Parameters
    ----------
    tracking_uri
        The store.
    result
        The run's result (models are logged from it).
    parent_run_id
        The flow run's MLflow run.
    flow_run_id
        Tagged ``prefect.flow_run_id``.
    extra_artifacts
        Artifact folder → local folder (the validation reports).
    backend
        The Stage 1 backend, tagged ``fedcare.backend``.
    models
        Log every client's deployed model and, for FedCARE and FedCARE-B, the backbone.

    Returns
    -------
    str
        The run id.
    """
    store.configure(tracking_uri)
    run_id = log_run.log_experiment(
        result,
        parent_run_id=parent_run_id,
        flow_run_id=flow_run_id,
        extra_artifacts=dict(extra_artifacts),
        tags={"fedcare.backend": backend},
        models=models,
    )
    run_logger().info(
        "logged %s seed %d as MLflow run %s", result.config.algorithm, result.config.seed, run_id
    )
    return run_id


@task(
    name="mlflow-log-parent-summary",
    retries=IO_RETRIES,
    retry_delay_seconds=IO_RETRY_DELAY_S,
    retry_condition_fn=retry_on_io_error,
    cache_policy=NO_CACHE,
    persist_result=False,
)
def log_parent_summary_task(tracking_uri: str, parent_run_id: str) -> int:
    """Log the mean and std over seeds of the parent's finished runs on the parent run.

    Reads the runs back from MLflow (:func:`fedcare.tracking.summary.log_parent_summary`), so
    a flow run that failed part-way still summarises the runs it finished. Logging the same
    values again (a retry) only adds points at step 0.

    Returns
    -------
    int
        How many summary metrics were logged.
    """
    store.configure(tracking_uri)
    values = summary.log_parent_summary(parent_run_id)
    run_logger().info("logged %d summary metrics over seeds on %s", len(values), parent_run_id)
    return len(values)


@task(
    name="mlflow-register-models",
    retries=IO_RETRIES,
    retry_delay_seconds=IO_RETRY_DELAY_S,
    retry_condition_fn=retry_on_io_error,
    cache_policy=NO_CACHE,
    persist_result=False,
)
def register_task(tracking_uri: str, result: ExperimentResult, run_id: str) -> Registrations:
    """Register the run's backbone and every client's model; ``champion`` moves only if better.

    The backbone (FedCARE, FedCARE-B) is judged on the mean, over the binary objectives, of
    the mean validation AUROC over clients, each client scored with the model it deploys
    (:func:`fedcare.tracking.registry.validation_score`); each client's model on its own
    validation score (:mod:`fedcare.tracking.client_registry`).

    Parameters
    ----------
    tracking_uri
        The store.
    result
        The run's result.
    run_id
        Its MLflow run (logged with models).

    Returns
    -------
    Registrations
        The new versions and which took ``champion``.
    """
    store.configure(tracking_uri)
    registrations = track.register_run(result, run_id)
    logger = run_logger()
    reg = registrations.backbone
    if reg is not None:
        logger.info(
            "registered %s version %d (validation AUROC %.4f)%s",
            reg.model_name,
            reg.version,
            reg.score,
            "; it is the new champion" if reg.promoted else "; the champion is unchanged",
        )
    for c in registrations.clients:
        logger.info(
            "registered %s version %d (%s %.4f)%s",
            c.model_name,
            c.version,
            c.score.name,
            c.score.value,
            "; it is the new champion" if c.promoted else "",
        )
    return registrations


@task(
    name="mlflow-finish-run",
    retries=IO_RETRIES,
    retry_delay_seconds=IO_RETRY_DELAY_S,
    retry_condition_fn=retry_on_io_error,
    cache_policy=NO_CACHE,
    persist_result=False,
)
def finish_run_task(tracking_uri: str, run_id: str, status: str) -> None:
    """End a run with ``status`` (``FINISHED``, ``FAILED`` or ``KILLED``)."""
    store.configure(tracking_uri)
    store.finish_run(run_id, status)


@task(
    name="mlflow-run-experiment",
    retries=IO_RETRIES,
    retry_delay_seconds=IO_RETRY_DELAY_S,
    retry_condition_fn=retry_on_io_error,
    cache_policy=NO_CACHE,
    persist_result=False,
)
def experiment_id_task(tracking_uri: str, run_id: str) -> str:
    """The id of the experiment a run is in (the MLflow UI's links name it)."""
    store.configure(tracking_uri)
    return str(store.client().get_run(run_id).info.experiment_id)
