"""The local store's paths, and ``mlflow-artifacts:`` URIs resolved without the server.

The stack's MLflow server (``fedcare stack up``) proxies artifacts: experiments it creates store
``mlflow-artifacts:/<experiment>/<run>/artifacts`` locations, which MLflow resolves only through
an HTTP tracking URI. The server keeps those files in ``<store>/artifacts/`` beside its SQLite
database, so a client on the same machine that opens the database directly
(``--tracking-uri sqlite:///mlflow/mlflow.db``, the stack up or down) can read and write them
there. :func:`artifact_repository` is registered for the ``mlflow-artifacts`` scheme through
MLflow's ``mlflow.artifact_repository`` entry point (``pyproject.toml``; it reaches
``mlflow models serve`` and any MLflow client in this environment) and again by
:func:`register_artifact_repository` when FedCARE configures a store (a stale ``*.egg-info`` in
the working folder can hide the entry point): with a ``sqlite:``
tracking URI it maps the location into the database's ``artifacts/`` folder; with any other
tracking URI it is MLflow's own repository, unchanged.

This module imports nothing from MLflow at module level: MLflow loads it while importing itself.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

#: Folder (relative to the project root) that holds the local store; never a Python package.
_STORE_DIR = "mlflow"
#: SQLite database file inside :data:`_STORE_DIR`.
_DB_FILE = "mlflow.db"
#: Artifact root folder, beside the database (the stack's ``--artifacts-destination``).
_ARTIFACTS_DIR = "artifacts"


def sqlite_path(tracking_uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` URI; ``None`` for other URIs or in-memory SQLite."""
    parsed = urlparse(tracking_uri)
    if parsed.scheme != "sqlite":
        return None
    path = unquote(parsed.path)
    # sqlite:///rel.db parses to "/rel.db" and sqlite:////abs.db to "//abs.db".
    path = path[1:] if path.startswith("/") else path
    if not path or path == ":memory:":
        return None
    return Path(path).resolve()


def default_tracking_uri(project_root: str | Path) -> str:
    """The project's local SQLite store: ``sqlite:///<root>/mlflow/mlflow.db``.

    Parameters
    ----------
    project_root
        The project folder (the one holding ``mlflow/``).

    Returns
    -------
    str
        A SQLAlchemy SQLite URI with an absolute path (four slashes on POSIX).
    """
    db = Path(project_root).resolve() / _STORE_DIR / _DB_FILE
    return f"sqlite:///{db.as_posix()}"


def chosen_store(
    tracking_uri: str | None, project_root: str | Path, *, registry_set: str | None = None
) -> tuple[str, str]:
    """The tracking and registry URIs a FedCARE command uses.

    Parameters
    ----------
    tracking_uri
        The URI given (``--tracking-uri``): it then holds the registry too (a
        ``MLFLOW_REGISTRY_URI`` left in the shell, e.g. by ``fedcare stack env``, is not
        followed). ``None``: ``MLFLOW_TRACKING_URI`` when set, else :func:`default_tracking_uri`
        of ``project_root``, and ``MLFLOW_REGISTRY_URI`` for the registry when set.
    project_root
        Folder holding ``mlflow/`` for the default store.
    registry_set
        A registry URI this process set itself (MLflow writes it to ``MLFLOW_REGISTRY_URI``):
        not taken for the user's.

    Returns
    -------
    tuple of str
        The tracking URI and the registry URI.
    """
    explicit = tracking_uri is not None
    tracking = (
        tracking_uri
        if tracking_uri is not None
        else (os.environ.get("MLFLOW_TRACKING_URI") or default_tracking_uri(project_root))
    )
    user = os.environ.get("MLFLOW_REGISTRY_URI")
    registry = user if user and user != registry_set and not explicit else tracking
    return tracking, registry


def artifact_root_for(tracking_uri: str) -> Path | None:
    """Artifact root beside a SQLite store (``<db folder>/artifacts``); ``None`` otherwise."""
    db = sqlite_path(tracking_uri)
    return None if db is None else db.parent / _ARTIFACTS_DIR


def local_location(artifact_uri: str, tracking_uri: str) -> Path | None:
    """Where an ``mlflow-artifacts:`` location lives beside a SQLite store, else ``None``.

    Parameters
    ----------
    artifact_uri
        ``mlflow-artifacts:/<path>`` (a host part, ``mlflow-artifacts://host:port/<path>``,
        names a server: its files are not local, so ``None``).
    tracking_uri
        The tracking URI in use.

    Returns
    -------
    pathlib.Path or None
        ``<db folder>/artifacts/<path>``.
    """
    root = artifact_root_for(tracking_uri)
    parsed = urlparse(artifact_uri)
    if root is None or parsed.scheme != "mlflow-artifacts" or parsed.netloc:
        return None
    relative = Path(unquote(parsed.path).lstrip("/"))
    if ".." in relative.parts:
        return None
    return root / relative


def artifact_repository(
    artifact_uri: str, tracking_uri: str | None = None, registry_uri: str | None = None
) -> Any:
    """MLflow artifact repository for an ``mlflow-artifacts:`` URI (see the module's notes).

    Parameters
    ----------
    artifact_uri
        The location, ``mlflow-artifacts:/…``.
    tracking_uri, registry_uri
        As MLflow passes them to every repository; the tracking URI defaults to MLflow's
        current one.

    Returns
    -------
    mlflow.store.artifact.artifact_repo.ArtifactRepository
        A local repository in the SQLite store's ``artifacts/`` folder, or MLflow's own
        ``MlflowArtifactsRepository`` for a tracking server.
    """
    from mlflow.store.artifact.local_artifact_repo import LocalArtifactRepository
    from mlflow.store.artifact.mlflow_artifacts_repo import MlflowArtifactsRepository
    from mlflow.tracking._tracking_service.utils import get_tracking_uri

    local = local_location(artifact_uri, tracking_uri or get_tracking_uri())
    if local is None:
        return MlflowArtifactsRepository(
            artifact_uri, tracking_uri=tracking_uri, registry_uri=registry_uri
        )
    return LocalArtifactRepository(
        local.as_uri(), tracking_uri=tracking_uri, registry_uri=registry_uri
    )


def register_artifact_repository() -> None:
    """Register :func:`artifact_repository` for the ``mlflow-artifacts`` scheme in this process."""
    from mlflow.store.artifact.artifact_repository_registry import (
        _artifact_repository_registry,
    )

    _artifact_repository_registry.register("mlflow-artifacts", artifact_repository)
