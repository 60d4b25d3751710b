"""``mlflow-artifacts:`` locations of the stack's server, read and written via its SQLite file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fedcare.tracking import local_artifacts
from tests.mlflow_server import mlflow_server

pytestmark = pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy:DeprecationWarning")


def test_a_server_location_maps_into_the_stores_artifacts_folder(tmp_path):
    uri = f"sqlite:///{tmp_path}/mlflow/mlflow.db"
    got = local_artifacts.local_location("mlflow-artifacts:/3/abc/artifacts", uri)
    assert got == tmp_path.resolve() / "mlflow" / "artifacts" / "3" / "abc" / "artifacts"


@pytest.mark.parametrize(
    ("artifact_uri", "tracking_uri"),
    [
        ("mlflow-artifacts:/3/abc", "http://127.0.0.1:5000"),  # the server resolves it
        ("mlflow-artifacts://10.0.0.5:5000/3/abc", "sqlite:///x.db"),  # another server's files
        ("mlflow-artifacts:/../../etc", "sqlite:///x.db"),  # never outside the store
        ("file:///tmp/x", "sqlite:///x.db"),
    ],
)
def test_other_locations_are_left_to_mlflow(artifact_uri, tracking_uri):
    assert local_artifacts.local_location(artifact_uri, tracking_uri) is None


def test_runs_of_the_stacks_server_open_through_its_sqlite_file(tmp_path):
    # A run logged through the server (as the flow logs) and a model in its registry, then read
    # and extended with --tracking-uri sqlite:///… on the same store, the server stopped.
    with mlflow_server(tmp_path) as url:
        made = _python(
            url,
            "import mlflow, mlflow.pyfunc\n"
            "class M(mlflow.pyfunc.PythonModel):\n"
            "    def predict(self, context, model_input):\n"
            "        return model_input * 2\n"
            "mlflow.set_experiment('fedcare/x')\n"
            "with mlflow.start_run() as run:\n"
            "    mlflow.log_text('hello', 'notes/a.txt')\n"
            "    mlflow.pyfunc.log_model(name='m', python_model=M(), registered_model_name='m')\n"
            "print(run.info.run_id, run.info.artifact_uri)\n",
        )
    run_id, artifact_uri = made.split()
    assert artifact_uri.startswith("mlflow-artifacts:")
    db = f"sqlite:///{tmp_path}/mlflow/mlflow.db"
    out = _python(
        db,
        "import mlflow, mlflow.pyfunc, pandas as pd\n"
        "from fedcare.tracking import store\n"
        f"store.configure({db!r})\n"
        f"print(mlflow.artifacts.load_text('runs:/{run_id}/notes/a.txt'))\n"
        "m = mlflow.pyfunc.load_model('models:/m/1')\n"
        "print(int(m.predict(pd.DataFrame({'a': [21]}))['a'][0]))\n"
        "mlflow.set_experiment('fedcare/x')\n"
        "with mlflow.start_run():\n"
        "    mlflow.log_text('more', 'notes/b.txt')\n",
    )
    assert out.split() == ["hello", "42"]
    assert (tmp_path / "mlflow" / "artifacts").is_dir()
    assert list((tmp_path / "mlflow" / "artifacts").rglob("b.txt"))


def test_mlflow_itself_finds_the_repository_through_the_entry_point(tmp_path):
    # `mlflow models serve` never runs FedCARE's configure: the entry point must register it.
    out = _python(
        f"sqlite:///{tmp_path}/m.db",
        "from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository\n"
        "print(type(get_artifact_repository('mlflow-artifacts:/1/r/artifacts')).__name__)\n",
    )
    assert out.strip() == "LocalArtifactRepository"


def _python(tracking_uri: str, code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=_env(tracking_uri),
        cwd=Path(__file__).parent,  # never a folder holding a stale fedcare.egg-info
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _env(tracking_uri: str) -> dict[str, str]:
    import os

    from fedcare.stack.settings import OFFLINE_ENV

    # The registry too: earlier tests' stores are left in MLFLOW_REGISTRY_URI by MLflow.
    env = {**os.environ, **OFFLINE_ENV, "MLFLOW_TRACKING_URI": tracking_uri}
    return env | {"MLFLOW_REGISTRY_URI": tracking_uri}
