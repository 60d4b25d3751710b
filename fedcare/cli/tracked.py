"""``fedcare run --tracking-uri``: log an in-process run to MLflow exactly as the flow does.

The store is checked before any work, creating nothing (:func:`check_chosen_store`: a server
answers, a SQLite file is one or could be made), so a wrong URI fails in a second, not after
training, and a run refused by a later check leaves no store behind; it is opened (a new one
made) only when the finished run is logged (:class:`MlflowSink`). The run is logged and
registered by :func:`fedcare.tracking.track.track_result`, the entry the Prefect flow's tasks
use: the same runs, λ* traces, models and registry versions.
"""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fedcare_core.errors import ConfigError
from fedcare_core.files.output_paths import check_output_dir, check_output_file

#: Seconds to wait for a tracking server to answer before any work.
_REACH_TIMEOUT_S = 5.0

if TYPE_CHECKING:
    from fedcare_core.run.results import ExperimentResult


def open_store(uri: str, what: str = "--tracking-uri") -> str:
    """Point MLflow at ``uri`` and reach it; the URI in use.

    Parameters
    ----------
    uri
        The tracking URI.
    what
        Where it was given, for the message (the option or the environment variable).

    Raises
    ------
    ConfigError
        If the store cannot be opened or reached (one line naming ``what``).
    """
    import fedcare.tracking  # noqa: F401  (MLflow telemetry off before mlflow is imported)
    from fedcare.tracking import store

    # An empty or older SQLite store is set up on first use: not an INFO line per table step.
    for name in ("mlflow.store.db.utils", "alembic"):
        logging.getLogger(name).setLevel(logging.WARNING)
    try:
        if uri.startswith(("http://", "https://")):
            _reach(uri)
        in_use = store.configure(uri)
        store.client().search_experiments(max_results=1)
    except Exception as exc:  # any failure to open the store is the URI's
        detail = " ".join(str(exc).split())[:300]
        raise ConfigError(f"{what} {uri}: cannot open the MLflow store ({detail})") from None
    return in_use


@dataclass(frozen=True)
class ChosenStore:
    """A store chosen and checked, not yet opened: its URI and where it was given."""

    uri: str
    what: str = "--tracking-uri"


def check_chosen_store(uri: str | None) -> ChosenStore | None:
    """The store to log to (as :func:`open_chosen_store` chooses it), checked, nothing created.

    Raises
    ------
    ConfigError
        If the chosen store could not be opened (see :func:`check_store`).
    """
    env = os.environ.get("MLFLOW_TRACKING_URI")
    chosen = ChosenStore(uri) if uri else ChosenStore(env, "MLFLOW_TRACKING_URI") if env else None
    if chosen is not None:
        check_store(chosen.uri, chosen.what)
    return chosen


def check_store(uri: str, what: str = "--tracking-uri") -> None:
    """Check that the store at ``uri`` can be opened, without creating or changing anything.

    A server must answer now; a SQLite database must be one (an empty file is a new store), or
    its folder one where it can be made; a local folder store likewise. Any other kind of store
    (a database server) can only be checked by opening it (:func:`open_store`).

    Raises
    ------
    ConfigError
        One line naming ``what`` and the store.
    """
    from fedcare.tracking.local_artifacts import sqlite_path

    if uri.startswith(("http://", "https://")):
        try:
            _reach(uri)
        except Exception as exc:  # any failure to reach the server is the URI's
            detail = " ".join(str(exc).split())[:300]
            raise ConfigError(f"{what} {uri}: cannot open the MLflow store ({detail})") from None
        return
    db = sqlite_path(uri)
    if db is not None:
        _check_sqlite_store(db, f"{what} {uri}")
        return
    if uri.startswith("sqlite:"):  # in memory: nothing to check
        return
    folder = _local_folder(uri)
    if folder is not None:
        check_output_dir(folder, f"{what} {uri}:")
        return
    open_store(uri, what)


def _local_folder(uri: str) -> Path | None:
    """The folder of a local file store (``file:///x/mlruns`` or a bare path); None: another."""
    from urllib.parse import unquote, urlparse

    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path))
    return Path(uri) if parsed.scheme == "" else None


def _check_sqlite_store(db: Path, where: str) -> None:
    """A SQLite store's file: an MLflow database (or an empty one), or one that can be made."""
    import contextlib
    import sqlite3

    if not db.exists():
        check_output_file(db, f"{where}:")  # the folder it will be made in (or made then)
        return
    if not db.is_file() or not os.access(db, os.R_OK | os.W_OK):
        raise ConfigError(f"{where}: {db} is not a readable and writable file")
    try:
        with contextlib.closing(sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)) as con:
            tables = {row[0] for row in con.execute("SELECT name FROM sqlite_master")}
    except sqlite3.Error as exc:
        raise ConfigError(f"{where}: {db} is not an SQLite database ({exc})") from None
    if tables and "experiments" not in tables:
        raise ConfigError(f"{where}: {db} holds another program's tables, not an MLflow store")


def open_chosen_store(uri: str | None) -> str | None:
    """The store to log to: ``--tracking-uri``, else ``$MLFLOW_TRACKING_URI``, else ``None``.

    Raises
    ------
    ConfigError
        If the chosen store cannot be opened (see :func:`open_store`).
    """
    if uri:
        return open_store(uri)
    env = os.environ.get("MLFLOW_TRACKING_URI")
    return open_store(env, "MLFLOW_TRACKING_URI") if env else None


def _reach(uri: str) -> None:
    """GET the tracking server's ``/health`` within seconds (MLflow's client retries minutes)."""
    import urllib.request

    with urllib.request.urlopen(f"{uri.rstrip('/')}/health", timeout=_REACH_TIMEOUT_S) as reply:
        reply.read()


@dataclass(frozen=True)
class MlflowSink:
    """Sink (:class:`fedcare.app.run.ResultSink`): log and register a run in a store."""

    store: ChosenStore
    backend: str
    entry: str = "fedcare run"
    site_name: str | None = None
    margin: float | None = None

    def write(self, result: ExperimentResult, document: dict[str, Any]) -> None:
        """Open the store (made now if new: every check of the run passed) and log ``result``."""
        uri = open_store(self.store.uri, self.store.what)
        track(
            uri, result, self.backend, entry=self.entry, site_name=self.site_name,
            margin=self.margin,
        )  # fmt: skip


def track(
    uri: str,
    result: ExperimentResult,
    backend: str,
    *,
    entry: str = "fedcare run",
    site_name: str | None = None,
    margin: float | None = None,
) -> None:
    """Log and register ``result`` in the store :func:`open_store` opened; say where.

    Parameters
    ----------
    uri
        The store in use.
    result
        The run's result.
    backend, entry
        Tagged ``fedcare.backend`` and ``fedcare.entry`` (the command that ran it).
    site_name
        The run is this site's own Stage 2 (``fedcare site personalise``): tagged
        ``fedcare.site``, its model registered under the site's name.
    margin
        The site's promotion margin (``--promotion-margin``): its new version is the
        challenger and the champion unless worse by more than this.
    """
    from fedcare.tracking import store
    from fedcare.tracking.links import run_url
    from fedcare.tracking.track import track_result

    logging.getLogger("mlflow").setLevel(logging.WARNING)  # not an INFO line per model logged
    store.configure(uri)
    tags = {"fedcare.backend": backend, "fedcare.entry": entry}
    if site_name is not None:
        tags["fedcare.site"] = site_name
    tracked = track_result(result, tags=tags, site_name=site_name, margin=margin)
    experiment_id = store.client().get_run(tracked.run_id).info.experiment_id
    page = run_url(uri, experiment_id, tracked.run_id)  # a server's UI, in model-training mode
    print(f"MLflow run {tracked.run_id} in {uri}" + (f" ({page})" if page else ""), file=sys.stderr)
    for name, version, promoted in tracked.registrations.versions():
        flag = " (champion)" if promoted else ""
        print(f"registered {name} version {version}{flag}", file=sys.stderr)
    if margin is not None:
        for client in tracked.registrations.clients:
            print(f"{client.model_name} version {client.version} (challenger): {client.reason}")


def check_site_model_name(dataset: str, algorithm: str, site: str) -> None:
    """Check, before any work, that the site's model can be registered under the site's name.

    The model is registered as ``fedcare-<dataset>-<algorithm>-<objectives>-<site>``
    (:func:`fedcare.tracking.model_names.site_model_name`).

    Raises
    ------
    ConfigError
        For a site name that would take another model's name.
    """
    from fedcare.tracking.model_names import check_site_name

    del dataset, algorithm  # the name's other parts cannot clash
    check_site_name(site)
