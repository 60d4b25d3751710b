"""Where runs are tracked: the tracking URI, one experiment per dataset, flow-level parent runs.

The default store is a SQLite database under the project's ``mlflow/`` folder with artifacts
beside it (``mlflow/mlflow.db``, ``mlflow/artifacts/``). Any other tracking URI (another SQLite
file, a tracking server) is accepted; for a SQLite file the artifacts go next to the database.

Every FedCARE experiment is marked a model-training experiment: the tag
``mlflow.experimentKind = custom_model_development`` (:data:`_EXPERIMENT_KIND`), the value the
MLflow UI's experiment-type selector writes for "Machine learning". MLflow 3.17's UI reads
that tag only when its workflow switch is off; with it on (as built) the page's mode is the
browser's "GenAI" / "Model training" switch: the URL's ``workflowType`` parameter, else the
choice remembered in the browser, else GenAI (``mlflow/server/js/build``: the
``mlflow.workflowType`` local-storage key and the experiment page's redirect). So FedCARE's
links into the UI also carry ``?workflowType=machine_learning``
(:mod:`fedcare.tracking.links`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from mlflow.exceptions import MlflowException
from mlflow.protos.databricks_pb2 import RESOURCE_ALREADY_EXISTS, ErrorCode
from mlflow.tracking import MlflowClient, get_tracking_uri, set_registry_uri, set_tracking_uri
from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID

from fedcare.tracking import views
from fedcare.tracking.local_artifacts import (
    artifact_root_for,
    chosen_store,
    register_artifact_repository,
    sqlite_path,
)
from fedcare.tracking.local_artifacts import (  # re-exported: the project's default store
    default_tracking_uri as default_tracking_uri,
)

#: Experiment name prefix: one experiment per dataset (``fedcare/diabetes130``).
_EXPERIMENT_PREFIX = "fedcare/"
#: Statuses a run may end with.
_END_STATUSES = ("FINISHED", "FAILED", "KILLED")
#: Experiment tag naming the dataset.
TAG_DATASET = "fedcare.dataset"
#: Experiment tag the MLflow UI reads an experiment's type from, and FedCARE's value of it
#: ("Machine learning": runs, metrics and models, not GenAI traces).
_TAG_EXPERIMENT_KIND = "mlflow.experimentKind"
_EXPERIMENT_KIND = "custom_model_development"

_artifact_root: Path | None = None
#: The registry URI :func:`configure` set last (MLflow mirrors it in ``MLFLOW_REGISTRY_URI``).
_registry_set: str | None = None


def configure(tracking_uri: str | None = None, *, project_root: str | Path | None = None) -> str:
    """Point MLflow (tracking and model registry) at a store.

    Parameters
    ----------
    tracking_uri
        Any MLflow tracking URI; given, it holds the model registry too (a
        ``MLFLOW_REGISTRY_URI`` left in the shell, e.g. by ``fedcare stack env``, is not
        followed). ``None`` uses ``MLFLOW_TRACKING_URI`` when set (and ``MLFLOW_REGISTRY_URI``
        for the registry when set), otherwise :func:`default_tracking_uri` of ``project_root``.
    project_root
        Folder holding ``mlflow/`` for the default store (default: the working directory).

    Returns
    -------
    str
        The tracking URI now in use.
    """
    global _artifact_root, _registry_set
    # The registry lives in the same store unless the user points it elsewhere. MLflow's
    # set_registry_uri also writes MLFLOW_REGISTRY_URI (for subprocesses), so a value equal to
    # the one set here last is this module's, not the user's: a second store gets its own.
    root = project_root if project_root is not None else Path.cwd()
    tracking_uri, registry = chosen_store(tracking_uri, root, registry_set=_registry_set)
    db = sqlite_path(tracking_uri)
    if db is not None:
        db.parent.mkdir(parents=True, exist_ok=True)
    _artifact_root = artifact_root_for(tracking_uri)
    _silence_telemetry()
    register_artifact_repository()
    set_tracking_uri(tracking_uri)
    set_registry_uri(registry)
    _registry_set = registry
    return tracking_uri


def _silence_telemetry() -> None:
    """Drop MLflow's telemetry client if it was started before the environment said not to.

    Importing :mod:`fedcare.tracking` first prevents the client from starting at all; this
    covers a caller that imported ``mlflow`` earlier.
    """
    from mlflow.telemetry.client import get_telemetry_client, set_telemetry_client

    if get_telemetry_client() is not None:
        set_telemetry_client()  # re-reads MLFLOW_DISABLE_TELEMETRY and clears the client


def client() -> MlflowClient:
    """A client for the configured store."""
    return MlflowClient(tracking_uri=get_tracking_uri())


def _experiment_name(dataset: str) -> str:
    """The experiment name of a dataset (``fedcare/<dataset>``; a definition file's name)."""
    from fedcare_core.data.registry import dataset_label

    return f"{_EXPERIMENT_PREFIX}{dataset_label(dataset)}"


def experiment_for(dataset: str) -> str:
    """Get or create the dataset's experiment, marked a model-training experiment.

    A new experiment on a SQLite store stores its artifacts under
    ``<artifact root>/<dataset>``; on other stores the server's default applies. It is created
    with a description of the run and metric names (:data:`fedcare.tracking.views.DESCRIPTION`)
    and :data:`_TAG_EXPERIMENT_KIND`; an existing experiment without that tag gets it (one a
    person set to another kind keeps theirs).

    Parameters
    ----------
    dataset
        Dataset name (``"diabetes130"``, ``"mimic3"``), or a definition file (its name).

    Returns
    -------
    str
        The experiment id.
    """
    from fedcare_core.data.registry import dataset_label

    dataset = dataset_label(dataset)
    mc = client()
    name = _experiment_name(dataset)
    found = mc.get_experiment_by_name(name)
    if found is not None:
        if _TAG_EXPERIMENT_KIND not in found.tags:
            mc.set_experiment_tag(found.experiment_id, _TAG_EXPERIMENT_KIND, _EXPERIMENT_KIND)
        return str(found.experiment_id)
    location = None if _artifact_root is None else (_artifact_root / dataset).as_uri()
    tags = {
        TAG_DATASET: dataset,
        _TAG_EXPERIMENT_KIND: _EXPERIMENT_KIND,
        views.NOTE_TAG: views.DESCRIPTION,
    }
    try:
        return str(mc.create_experiment(name, artifact_location=location, tags=tags))
    except MlflowException as exc:
        # Another process created it between the lookup and the create.
        if exc.error_code != ErrorCode.Name(RESOURCE_ALREADY_EXISTS):
            raise
        again = mc.get_experiment_by_name(name)
        if again is None:  # pragma: no cover - deleted in between
            raise
        return str(again.experiment_id)


def experiment_page(tracking_uri: str, dataset: str) -> str:
    """Where to open the dataset's runs: the UI page in model-training mode, else the store.

    Parameters
    ----------
    tracking_uri
        The store (``make run`` prints this for the stack's server).
    dataset
        Its experiment is ``fedcare/<dataset>``.

    Returns
    -------
    str
        ``<server>/#/experiments/<id>/runs?workflowType=machine_learning`` for a server that
        holds the experiment; otherwise ``tracking_uri`` itself.
    """
    from fedcare.tracking.links import experiment_url

    if not tracking_uri.startswith(("http://", "https://")):
        return tracking_uri
    found = MlflowClient(tracking_uri=tracking_uri).get_experiment_by_name(
        _experiment_name(dataset)
    )
    page = None if found is None else experiment_url(tracking_uri, str(found.experiment_id))
    return page or tracking_uri


def start_parent_run(
    dataset: str,
    *,
    run_name: str | None = None,
    tags: Mapping[str, str] | None = None,
    params: Mapping[str, str] | None = None,
) -> str:
    """Create the run of one flow run (the parent of its algorithm × seed runs).

    Parameters
    ----------
    dataset
        Selects the experiment (:func:`experiment_for`).
    run_name
        Display name (a flow run's: :func:`fedcare.tracking.naming.parent_run_name`).
    tags
        Run tags (e.g. ``prefect.flow_run_id``, ``fedcare.dataset_sha256``).
    params
        Flow-level parameters.

    Returns
    -------
    str
        The run id; end it with :func:`finish_run`.
    """
    mc = client()
    run = mc.create_run(experiment_for(dataset), run_name=run_name, tags=dict(tags or {}))
    for key, value in (params or {}).items():
        mc.log_param(run.info.run_id, key, value)
    return str(run.info.run_id)


def create_child_run(
    experiment_id: str,
    *,
    parent_run_id: str | None,
    run_name: str,
    tags: Mapping[str, str],
) -> str:
    """Create a run, nested under ``parent_run_id`` when given (MLflow's parent-run tag)."""
    all_tags = dict(tags)
    if parent_run_id is not None:
        all_tags[MLFLOW_PARENT_RUN_ID] = parent_run_id
    run = client().create_run(experiment_id, run_name=run_name, tags=all_tags)
    return str(run.info.run_id)


def finish_run(run_id: str, status: str = "FINISHED") -> None:
    """Mark a run ended with ``status`` (``FINISHED``, ``FAILED`` or ``KILLED``)."""
    if status not in _END_STATUSES:
        raise ValueError(f"unknown run status {status!r}; expected FINISHED, FAILED or KILLED")
    client().set_terminated(run_id, status=status)
