"""Where a registered model's files are in a local SQLite store, read without MLflow's client.

``fedcare predict`` scores a few rows and exits; opening a SQLite store through MLflow's
``SqlAlchemyStore`` (SQLAlchemy, Alembic and MLflow's store modules) costs about a second of
imports before the first query. For the registry URIs a hospital uses —
``models:/<name>@<alias>`` and ``models:/<name>/<version>`` — the version's files are found here
by two read-only queries of MLflow's own tables (``registered_model_aliases``,
``model_versions``), in the same places MLflow itself looks: the version's
``storage_location``, a ``file:`` folder or an ``mlflow-artifacts:`` location beside the store
(:func:`fedcare.tracking.local_artifacts.local_location`). Anything else — another URI form,
a tracking server, a version not READY, a schema this module does not know, no such alias —
answers ``None``, and the caller asks MLflow (which then also words any error). The folder is
the model's own (read, never written). ``tests/fedcare/tracking/test_model_folder.py`` checks
it against ``mlflow.artifacts.download_artifacts`` on a real store.

This module imports nothing from MLflow.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
from pathlib import Path
from urllib.parse import unquote, urlparse

from fedcare.tracking.local_artifacts import chosen_store, local_location, sqlite_path

#: The client model's one artifact: the package folder (:mod:`fedcare.tracking.pyfunc_model`).
PACKAGE_ARTIFACT = "package"
#: ``models:/<name>@<alias>`` and ``models:/<name>/<version>``.
_BY_ALIAS = re.compile(r"^models:/(?P<name>[^@/]+)@(?P<alias>[^@/]+)$")
_BY_VERSION = re.compile(r"^models:/(?P<name>[^@/]+)/(?P<version>[0-9]+)$")
#: MLflow's default workspace (the registry tables' ``workspace`` column).
_WORKSPACE = "default"


def registry_uri(tracking_uri: str | None) -> str:
    """The registry that ``models:/`` URIs are looked up in.

    :func:`~fedcare.tracking.local_artifacts.chosen_store`'s, as
    :func:`fedcare.tracking.store.configure` chooses it in a fresh process: ``tracking_uri``
    when given, else ``MLFLOW_REGISTRY_URI``, else ``MLFLOW_TRACKING_URI``, else the project's
    ``mlflow/mlflow.db`` in the working folder.
    """
    return chosen_store(tracking_uri, Path.cwd())[1]


def registered_model_folder(model_uri: str, tracking_uri: str | None) -> Path | None:
    """The local folder of a registered model version, or ``None`` to ask MLflow.

    Parameters
    ----------
    model_uri
        ``models:/<name>@<alias>`` or ``models:/<name>/<version>`` (any other form: ``None``).
    tracking_uri
        The store: a ``sqlite:`` URI of an existing database (any other: ``None``).

    Returns
    -------
    pathlib.Path or None
        The version's model folder (it holds ``MLmodel``), when the store has the version READY
        and its files are on this machine.
    """
    db = sqlite_path(tracking_uri) if tracking_uri else None
    if db is None or not db.is_file():
        return None
    alias, version = _BY_ALIAS.match(model_uri), _BY_VERSION.match(model_uri)
    if alias is None and version is None:
        return None
    try:
        with contextlib.closing(sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)) as con:
            if alias is not None:
                name = alias["name"]
                found = con.execute(
                    "SELECT version FROM registered_model_aliases "
                    "WHERE workspace = ? AND name = ? AND alias = ?",
                    (_WORKSPACE, name, alias["alias"]),
                ).fetchone()
                if found is None:
                    return None
                number = int(found[0])
            else:
                assert version is not None
                name, number = version["name"], int(version["version"])
            row = con.execute(
                "SELECT storage_location, status FROM model_versions "
                "WHERE workspace = ? AND name = ? AND version = ?",
                (_WORKSPACE, name, number),
            ).fetchone()
    except (sqlite3.Error, ValueError):  # another schema, a locked or damaged file: MLflow's
        return None
    if row is None or row[1] != "READY" or not row[0]:
        return None
    folder = _local_folder(str(row[0]), str(tracking_uri))
    return folder if folder is not None and (folder / "MLmodel").is_file() else None


def _local_folder(location: str, tracking_uri: str) -> Path | None:
    """A ``file:`` or store-local ``mlflow-artifacts:`` location as a path, else ``None``."""
    parsed = urlparse(location)
    if parsed.scheme == "file" and parsed.netloc in ("", "localhost"):
        return Path(unquote(parsed.path))
    if parsed.scheme == "mlflow-artifacts":
        return local_location(location, tracking_uri)
    if parsed.scheme == "" and Path(location).is_absolute():
        return Path(location)
    return None
