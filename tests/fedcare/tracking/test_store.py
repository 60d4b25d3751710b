from pathlib import Path

import mlflow.tracking
import pytest

from fedcare.tracking import store
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy:DeprecationWarning")


def test_default_uri_is_sqlite_under_the_project_mlflow_folder(tmp_path):
    uri = store.default_tracking_uri(tmp_path)
    assert uri == f"sqlite:///{tmp_path.resolve()}/mlflow/mlflow.db"
    assert uri.startswith("sqlite:////")
    assert store.sqlite_path(uri) == tmp_path.resolve() / "mlflow" / "mlflow.db"
    assert store.artifact_root_for(uri) == tmp_path.resolve() / "mlflow" / "artifacts"


@pytest.mark.parametrize(
    "uri", ["http://127.0.0.1:5000", "sqlite:///:memory:", "databricks", "postgresql://h/db"]
)
def test_non_file_stores_have_no_local_artifact_root(uri):
    assert store.artifact_root_for(uri) is None


def test_relative_sqlite_path_resolves_from_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert store.sqlite_path("sqlite:///rel/mlflow.db") == tmp_path.resolve() / "rel/mlflow.db"


def test_the_mlflow_folder_does_not_shadow_the_package():
    assert not (REPO_ROOT / "mlflow" / "__init__.py").exists()
    assert "site-packages" in Path(mlflow.__file__).parts


def test_telemetry_is_off():
    from mlflow.telemetry.client import get_telemetry_client

    assert get_telemetry_client() is None


def test_experiment_per_dataset_is_reused(logged):
    a = store.experiment_for("synthetic-other")
    assert store.experiment_for("synthetic-other") == a
    exp = store.client().get_experiment(a)
    assert exp.name == "fedcare/synthetic-other"
    assert exp.tags[store.TAG_DATASET] == "synthetic-other"
    assert exp.artifact_location.endswith("/mlflow/artifacts/synthetic-other")


def test_experiments_are_model_training_experiments(logged):
    """The tag the MLflow UI's experiment-type selector writes for "Machine learning"."""
    mc = store.client()
    created = mc.get_experiment(store.experiment_for("synthetic-kind"))
    assert created.tags["mlflow.experimentKind"] == "custom_model_development"
    # An experiment made before (or by hand) gets it when FedCARE uses it; a person's is kept.
    older = mc.create_experiment("fedcare/synthetic-older")
    store.experiment_for("synthetic-older")
    assert mc.get_experiment(older).tags["mlflow.experimentKind"] == "custom_model_development"
    mc.set_experiment_tag(older, "mlflow.experimentKind", "genai_development")
    store.experiment_for("synthetic-older")
    assert mc.get_experiment(older).tags["mlflow.experimentKind"] == "genai_development"
    # A local store has no UI page to print: `make run` shows the store itself.
    assert store.experiment_page(logged.uri, "synthetic") == logged.uri


def test_configure_defaults_to_the_environment_then_the_project(logged, monkeypatch, tmp_path):
    try:
        monkeypatch.setenv("MLFLOW_TRACKING_URI", logged.uri)
        assert store.configure() == logged.uri
        monkeypatch.delenv("MLFLOW_TRACKING_URI")
        expected = store.default_tracking_uri(tmp_path)
        assert store.configure(project_root=tmp_path) == expected
        assert mlflow.tracking.get_tracking_uri() == expected
        assert (tmp_path / "mlflow").is_dir()
    finally:
        store.configure(logged.uri)


def test_finish_run_refuses_unknown_status(logged):
    with pytest.raises(ValueError, match="status"):
        store.finish_run(logged.parent_id, "DONE")


def test_each_store_gets_its_own_registry_unless_the_user_names_one(logged, monkeypatch, tmp_path):
    """MLflow mirrors the registry URI into MLFLOW_REGISTRY_URI; that must not pin the first."""
    from mlflow.tracking import get_registry_uri

    try:
        first = store.configure(store.default_tracking_uri(tmp_path / "a"))
        assert get_registry_uri() == first
        second = store.configure(store.default_tracking_uri(tmp_path / "b"))
        assert get_registry_uri() == second != first
        chosen = store.default_tracking_uri(tmp_path / "registry")
        monkeypatch.setenv("MLFLOW_REGISTRY_URI", chosen)
        monkeypatch.setenv("MLFLOW_TRACKING_URI", store.default_tracking_uri(tmp_path / "c"))
        store.configure()  # both from the environment: the user's registry
        assert get_registry_uri() == chosen
        # A store given explicitly (--tracking-uri) holds its registry: a registry URI left in
        # the shell (`eval "$(fedcare stack env)"`, the stack since stopped) is not followed.
        monkeypatch.setenv("MLFLOW_REGISTRY_URI", "http://127.0.0.1:9")
        explicit = store.configure(store.default_tracking_uri(tmp_path / "d"))
        assert get_registry_uri() == explicit
    finally:
        monkeypatch.delenv("MLFLOW_REGISTRY_URI", raising=False)
        monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
        store.configure(logged.uri)
