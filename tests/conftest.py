"""Shared test fixtures: where the real datasets live; a throw-away Prefect server."""

from __future__ import annotations

import os
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]

# Prefect's home (settings, the flows' default Stage 1 cache) in a fresh folder per session, set
# before any test imports Prefect: tests never write into the user's ~/.prefect.
os.environ["PREFECT_HOME"] = tempfile.mkdtemp(prefix="fedcare-tests-prefect-")


# A shell without job control starts a background job (`make test &`) with SIGINT ignored, and
# an ignored signal is inherited across exec: the tests that press Ctrl-C, in process or in a
# child `fedcare`, would see nothing. They need the interpreter's default handler.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _project_packages() -> tuple[str, ...]:
    import tomllib

    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    return tuple(config["tool"]["mypy"]["files"])


#: The project's packages: those mypy checks (``[tool.mypy] files`` in pyproject.toml).
PROJECT_PACKAGES = _project_packages()


def shared_data_dir() -> Path | None:
    """Return the real-data directory (``FEDCARE_DATA_DIR`` or ``../shared/datasets``), if any."""
    env = os.environ.get("FEDCARE_DATA_DIR")
    candidates = [Path(env)] if env else []
    candidates.append(REPO_ROOT.parent / "shared" / "datasets")
    for c in candidates:
        if c.is_dir():
            return c.resolve()
    return None


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The real datasets' root; tests needing it are skipped when it is absent."""
    d = shared_data_dir()
    if d is None:
        pytest.skip("real datasets not found (set FEDCARE_DATA_DIR)")
    return d


#: What MLflow's ``set_tracking_uri`` / ``set_registry_uri`` write into the environment.
_MLFLOW_ENV = ("MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI")


@pytest.fixture(autouse=True)
def _mlflow_uris_do_not_leak() -> object:
    """Each test starts with the MLflow URIs the session had: a store one test configured
    (``fedcare.tracking.store.configure`` sets the environment, as MLflow does) would otherwise
    make a later ``fedcare run`` in the same process track to it."""
    before = {name: os.environ.get(name) for name in _MLFLOW_ENV}
    yield
    for name, value in before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="session")
def prefect_harness() -> Iterator[None]:
    """Run flows against a throw-away Prefect server and database (the flow tests').

    Its API URL is a setting, so the flow's process-pool workers report to it as well.
    """
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):
        yield
