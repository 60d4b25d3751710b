"""Links into the MLflow UI and server, for Prefect artifacts (no MLflow import here).

MLflow 3.17's UI is a hash-routed single-page app. Its route table
(``mlflow/server/js/build/static/js/main.*.js``, class of ``runPage``/``runPageWithTab``) knows
``/experiments/:experimentId/runs/:runUuid`` and ``/experiments/:experimentId/runs/:runUuid/*``,
and the UI's own links to an artifact are ``getRunPageRoute(experimentId, runUuid, path)`` =
``/experiments/<id>/runs/<run>/artifacts/<path>``, which opens the run's artifact browser on
that file (an HTML file previewed in the page). ``/runs/:runUuid`` alone also exists, but
``/runs/<run>/artifacts/<path>`` matches no route: the UI shows its 404 page. The server's
``/get-artifact?path=<path>&run_uuid=<run>`` (``mlflow/server/handlers.py``,
``get_artifact_handler``) returns the file itself, as a download (``Content-Disposition:
attachment``, so that no artifact's HTML runs on the server's origin).

Every UI link carries ``?workflowType=machine_learning``: MLflow 3.17's UI shows an experiment
in its "GenAI" mode (traces, no link to the model registry) unless the URL or the browser's
remembered switch says "Model training" (:mod:`fedcare.tracking.store`); the router matches the
path before the ``?``, and the run page reads the artifact path from the path alone.

Only an ``http(s)://`` tracking URI has a UI to link to; for a local store (``sqlite:///…``,
a folder) the functions return None and callers show the run id and path instead.
"""

from __future__ import annotations

from urllib.parse import quote, urlencode

#: The query that opens a UI page in its model-training mode.
MODEL_TRAINING_QUERY = "workflowType=machine_learning"


def ui_base(tracking_uri: str) -> str | None:
    """The MLflow server's base URL (no trailing slash), or None for a local store."""
    if tracking_uri.startswith(("http://", "https://")):
        return tracking_uri.rstrip("/")
    return None


def _run_page(base: str, experiment_id: str, run_id: str) -> str:
    return f"{base}/#/experiments/{quote(experiment_id, safe='')}/runs/{quote(run_id, safe='')}"


def experiment_url(tracking_uri: str, experiment_id: str) -> str | None:
    """The experiment's runs in the MLflow UI, in model-training mode."""
    base = ui_base(tracking_uri)
    if base is None:
        return None
    return f"{base}/#/experiments/{quote(experiment_id, safe='')}/runs?{MODEL_TRAINING_QUERY}"


def run_url(tracking_uri: str, experiment_id: str, run_id: str) -> str | None:
    """The run's page in the MLflow UI: ``<server>/#/experiments/<id>/runs/<run>?…``."""
    base = ui_base(tracking_uri)
    if base is None:
        return None
    return f"{_run_page(base, experiment_id, run_id)}?{MODEL_TRAINING_QUERY}"


def artifact_url(tracking_uri: str, experiment_id: str, run_id: str, path: str) -> str | None:
    """The run's artifact browser opened on ``path`` (a file or a folder) in the MLflow UI."""
    base = ui_base(tracking_uri)
    if base is None:
        return None
    where = quote(path.strip("/"), safe="/")
    return f"{_run_page(base, experiment_id, run_id)}/artifacts/{where}?{MODEL_TRAINING_QUERY}"


def artifact_download_url(tracking_uri: str, run_id: str, path: str) -> str | None:
    """The artifact file itself, from the server's ``/get-artifact`` route (a download)."""
    base = ui_base(tracking_uri)
    if base is None:
        return None
    return f"{base}/get-artifact?{urlencode({'path': path.strip('/'), 'run_uuid': run_id})}"


def report_location(
    tracking_uri: str, experiment_id: str, run_id: str, artifact_path: str, page: str
) -> str:
    """Where a report logged under ``artifact_path`` is in MLflow, as Markdown.

    Parameters
    ----------
    tracking_uri
        The MLflow tracking URI in use.
    experiment_id, run_id
        The run holding the report.
    artifact_path
        The report's folder among the run's artifacts (``validation/raw``).
    page
        The report's page inside that folder (``index.html``).

    Returns
    -------
    str
        With a server: a link that opens the page in the MLflow UI and one that downloads it;
        otherwise the run id, the artifact path and the store.
    """
    path = f"{artifact_path.strip('/')}/{page}"
    opened = artifact_url(tracking_uri, experiment_id, run_id, path)
    download = artifact_download_url(tracking_uri, run_id, path)
    if opened is None or download is None:
        return f"run {run_id}, artifacts/{path} ({tracking_uri})"
    return f"[{path} in the MLflow UI]({opened}) ([download]({download}))"
