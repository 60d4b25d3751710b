"""The read-only registry lookup finds the folder MLflow itself fetches, or leaves it to MLflow."""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import mlflow
import mlflow.artifacts
import pytest

from fedcare.tracking import store
from fedcare.tracking.model_folder import registered_model_folder, registry_uri

NAME = "fedcare-test-model"


class _Constant(mlflow.pyfunc.PythonModel):
    def predict(self, context, model_input, params=None):
        return model_input


@pytest.fixture(scope="module")
def registered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A SQLite store with two READY versions of one model, the second its ``champion``.

    MLflow points at it only while this module runs: the package's other tests share one
    logged store (``logged``) through MLflow's global URIs, the environment variables MLflow
    writes and :mod:`fedcare.tracking.store`'s state, all put back afterwards.
    """
    root = tmp_path_factory.mktemp("registry")
    before = mlflow.get_tracking_uri(), mlflow.get_registry_uri()
    with pytest.MonkeyPatch.context() as kept:
        for name in ("MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI"):
            value = os.environ.get(name)
            kept.setenv(name, value) if value is not None else kept.delenv(name, raising=False)
        for name in ("_artifact_root", "_registry_set"):
            kept.setattr(store, name, getattr(store, name))
        uri = store.configure(store.default_tracking_uri(root))
        # Its own experiment with its artifacts beside the store (the Default experiment's
        # location is ./mlruns of the working folder: the checkout).
        location = str(root / "artifacts")
        experiment = mlflow.create_experiment("model-folder", artifact_location=location)
        for _ in range(2):
            with mlflow.start_run(experiment_id=experiment):
                mlflow.pyfunc.log_model(
                    name="m", python_model=_Constant(), registered_model_name=NAME
                )
        store.client().set_registered_model_alias(NAME, "champion", "2")
        yield uri
        mlflow.set_tracking_uri(before[0])
        mlflow.set_registry_uri(before[1])


def _files(folder: Path) -> dict[str, bytes]:
    # MLflow's download adds the name and version it was asked for (registered_model_meta).
    files = [p for p in folder.rglob("*") if p.is_file() and p.name != "registered_model_meta"]
    return {str(p.relative_to(folder)): p.read_bytes() for p in files}


@pytest.mark.parametrize("uri", [f"models:/{NAME}@champion", f"models:/{NAME}/1"])
def test_the_folder_is_the_one_mlflow_fetches(registered, uri, tmp_path):
    found = registered_model_folder(uri, registered)
    assert found is not None and (found / "MLmodel").is_file()
    fetched = Path(
        mlflow.artifacts.download_artifacts(
            artifact_uri=uri, dst_path=str(tmp_path), tracking_uri=registered,
            registry_uri=registered,
        )
    )  # fmt: skip
    assert _files(found) == _files(fetched)
    other = registered_model_folder(f"models:/{NAME}/2", registered)
    assert (other == found) == uri.endswith("@champion")  # the alias points at version 2


@pytest.mark.parametrize(
    "uri",
    [
        f"models:/{NAME}@nope",  # no such alias
        f"models:/{NAME}/9",  # no such version
        "models:/nope@champion",
        "models:/m-0123456789abcdef",  # a logged model's id: MLflow's to resolve
        f"models:/{NAME}/latest",
        "runs:/0123/m",
        "/some/folder",
    ],
)
def test_other_uris_are_left_to_mlflow(registered, uri):
    assert registered_model_folder(uri, registered) is None


def test_other_stores_are_left_to_mlflow(registered, tmp_path):
    uri = f"models:/{NAME}@champion"
    assert registered_model_folder(uri, "http://127.0.0.1:5000") is None
    assert registered_model_folder(uri, f"sqlite:///{tmp_path / 'none.db'}") is None
    assert not (tmp_path / "none.db").exists()  # read-only: nothing created
    (tmp_path / "empty.db").write_bytes(b"")
    assert registered_model_folder(uri, f"sqlite:///{tmp_path / 'empty.db'}") is None
    (tmp_path / "junk.db").write_bytes(b"not a database at all" * 100)
    assert registered_model_folder(uri, f"sqlite:///{tmp_path / 'junk.db'}") is None


def _copy(registered: str, tmp_path: Path) -> tuple[str, Path]:
    db = Path(registered.removeprefix("sqlite:///"))
    copy = tmp_path / "mlflow.db"
    shutil.copy(db, copy)
    return f"sqlite:///{copy}", copy


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("status", "PENDING_REGISTRATION"),
        ("storage_location", "s3://bucket/models/m"),
        ("storage_location", "file:///nonexistent/models/m"),
        ("storage_location", None),
    ],
)
def test_a_version_not_ready_or_not_here_is_left_to_mlflow(registered, tmp_path, column, value):
    uri, db = _copy(registered, tmp_path)
    with sqlite3.connect(db) as con:
        con.execute(f"UPDATE model_versions SET {column} = ?", (value,))
    assert registered_model_folder(f"models:/{NAME}@champion", uri) is None


def test_a_location_of_the_stacks_server_resolves_beside_the_store(registered, tmp_path):
    # The stack's server stores mlflow-artifacts:/<path>, kept in <store>/artifacts/<path>.
    uri, db = _copy(registered, tmp_path)
    source = registered_model_folder(f"models:/{NAME}@champion", registered)
    assert source is not None
    shutil.copytree(source, tmp_path / "artifacts" / "1" / "models" / "m" / "artifacts")
    with sqlite3.connect(db) as con:
        con.execute(
            "UPDATE model_versions SET storage_location = ?",
            ("mlflow-artifacts:/1/models/m/artifacts",),
        )
    found = registered_model_folder(f"models:/{NAME}@champion", uri)
    assert found == tmp_path / "artifacts" / "1" / "models" / "m" / "artifacts"
    with sqlite3.connect(db) as con:  # a location that climbs out of the store: not followed
        con.execute("UPDATE model_versions SET storage_location = ?", ("mlflow-artifacts:/../x",))
    assert registered_model_folder(f"models:/{NAME}@champion", uri) is None


def test_the_registry_is_chosen_as_configure_chooses_it(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    for name in ("MLFLOW_REGISTRY_URI", "MLFLOW_TRACKING_URI"):
        monkeypatch.delenv(name, raising=False)
    assert registry_uri(None) == store.default_tracking_uri(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "sqlite:///t.db")
    assert registry_uri(None) == "sqlite:///t.db"
    monkeypatch.setenv("MLFLOW_REGISTRY_URI", "sqlite:///r.db")
    assert registry_uri(None) == "sqlite:///r.db"
    assert registry_uri("sqlite:///given.db") == "sqlite:///given.db"  # given: holds its registry
