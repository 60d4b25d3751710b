"""``fedcare run --tracking-uri`` then ``fedcare predict``: raw rows in, named predictions out.

One small real run is logged to a throw-away SQLite store; client models are then loaded by
registry URI, as a hospital would, and used on the first rows of ``diabetic_data.csv``.
"""

from __future__ import annotations

import io
import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path
from types import SimpleNamespace

import mlflow.artifacts
import mlflow.pyfunc
import numpy as np
import pandas as pd
import pytest

from fedcare.cli.main import main

pytestmark = [
    pytest.mark.realdata,
    pytest.mark.filterwarnings("ignore:No complete tensor found:UserWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]
IDENTIFIERS = ["encounter_id", "patient_nbr"]


@pytest.fixture(scope="module")
def tracked(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    root = tmp_path_factory.mktemp("predict")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    args = ["run", "--dataset", "diabetes130", "--data-dir", str(data_dir), "--seed", "4"]
    args += ["--clients", "3", "--rounds", "2", "--max-patients", "1500", "--stage2-epochs", "2"]
    assert main([*args, "--quiet", "--tracking-uri", uri, "--out", str(root / "r.json")]) == 0
    with zipfile.ZipFile(data_dir / "diabetes130" / "dataset_diabetes.zip") as zf:
        data = zf.read("dataset_diabetes/diabetic_data.csv")
    rows = pd.read_csv(io.BytesIO(data), nrows=300).drop(columns=["time_in_hospital", "readmitted"])
    csv = root / "rows.csv"
    rows.to_csv(csv, index=False)
    return SimpleNamespace(root=root, uri=uri, rows=rows, csv=csv, models=_client_models(uri))


def _client_models(uri: str) -> dict[int, str]:
    """Client → its registered model, found by the registered model's tags."""
    from fedcare.tracking import store

    store.configure(uri)
    found = store.client().search_registered_models()
    return {int(m.tags["fedcare.client"]): m.name for m in found if "fedcare.client" in m.tags}


def _predict(tracked: SimpleNamespace, *extra: str, client: int = 0) -> int:
    uri = f"models:/{tracked.models[client]}@champion"
    return main(["predict", "--model", uri, "--tracking-uri", tracked.uri, *extra])


def test_predict_keeps_identifiers_and_matches_the_python_api(tracked, tmp_path, capsys):
    out = tmp_path / "scores" / "pred.csv"
    assert _predict(tracked, "--data", str(tracked.csv), "--out", str(out)) == 0
    written = pd.read_csv(out)
    assert list(written.columns[:2]) == IDENTIFIERS
    assert (written[IDENTIFIERS].to_numpy() == tracked.rows[IDENTIFIERS].to_numpy()).all()
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    mlflow.set_tracking_uri(tracked.uri)
    model = mlflow.pyfunc.load_model(f"models:/{tracked.models[0]}@champion")
    python = model.predict(tracked.rows)
    assert list(written.columns[2:]) == list(python.columns)
    assert (written[python.columns].to_numpy() == python.to_numpy()).all()
    printed = capsys.readouterr()
    for value in tracked.rows["encounter_id"].head(20).astype(str):
        assert value not in printed.out + printed.err


def test_every_form_of_model_uri_scores_the_same(tracked, tmp_path):
    # The registry's names are found read-only in the SQLite store; a logged model's id and a
    # local folder go through MLflow: the same model, the same scores.
    from fedcare.tracking import store

    store.configure(tracked.uri)
    version = store.client().get_model_version_by_alias(tracked.models[2], "champion")
    logged = version.source  # models:/<logged model id>
    assert logged.startswith("models:/m-")
    folder = mlflow.artifacts.download_artifacts(logged, dst_path=str(tmp_path))
    scores = []
    for uri in (
        f"models:/{tracked.models[2]}@champion",
        f"models:/{tracked.models[2]}/{version.version}",
        logged,
        folder,
    ):
        out = tmp_path / f"scores{len(scores)}.csv"
        argv = ["predict", "--model", uri, "--tracking-uri", tracked.uri]
        assert main([*argv, "--data", str(tracked.csv), "--out", str(out)]) == 0, uri
        scores.append(out.read_bytes())
    assert len(set(scores)) == 1
    # The command as a hospital runs it (its own process, ended at once when done): the same.
    out = tmp_path / "program.csv"
    argv = ["predict", "--model", f"models:/{tracked.models[2]}@champion"]
    argv += ["--tracking-uri", tracked.uri, "--data", str(tracked.csv), "--out", str(out)]
    done = subprocess.run([sys.executable, "-m", "fedcare.cli", *argv], capture_output=True)
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == scores[0] and b"scored 300 rows" in done.stderr


def test_every_client_has_a_champion_with_its_metrics(tracked):
    from fedcare.tracking import store

    store.configure(tracked.uri)
    mc = store.client()
    assert sorted(tracked.models) == [0, 1, 2]
    for k, name in tracked.models.items():
        # The name says what the model predicts and whom it serves; so do its tags.
        model = mc.get_registered_model(name)
        objectives = model.tags["fedcare.objectives"].split(",")
        assert name == f"fedcare-diabetes130-fedcare-{'+'.join(objectives)}-client{k}"
        assert model.tags["fedcare.dataset"] == "diabetes130"
        assert "diabetic_data.csv" in model.description
        outputs = model.tags["fedcare.outputs"].split(",")
        predicted = mlflow.pyfunc.load_model(f"models:/{name}@champion").predict(tracked.rows)
        assert list(predicted.columns) == outputs  # what the tags say is what it returns
        version = mc.get_model_version_by_alias(name, "champion")
        tags = version.tags
        assert tags["fedcare.client"] == str(k) and tags["fedcare.run_id"] == version.run_id
        assert any(t.startswith("fedcare.val.") for t in tags)
        assert any(t.startswith("fedcare.test.") for t in tags)
        assert version.run_id in version.description and "| objective |" in version.description


def test_bad_rows_name_the_file_and_column(tracked, tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    tracked.rows.drop(columns=["age"]).to_csv(bad, index=False)
    assert _predict(tracked, "--data", str(bad), "--out", str(tmp_path / "o.csv")) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("fedcare: error: file ") and str(bad) in err and "'age'" in err
    assert len(err.splitlines()) == 1 and not (tmp_path / "o.csv").exists()

    rows = tracked.rows.copy()
    rows["gender"] = rows["gender"].astype(object)
    rows.loc[11, "gender"] = "Unknown/Other/Robot"
    rows.to_csv(bad, index=False)
    assert _predict(tracked, "--data", str(bad), "--out", str(tmp_path / "o.csv")) == 2
    err = capsys.readouterr().err
    assert "column 'gender'; row 12" in err and "Robot" not in err
    out = tmp_path / "other.csv"
    args = ["--data", str(bad), "--out", str(out), "--unseen-categories", "other"]
    assert _predict(tracked, *args) == 0
    assert np.isfinite(pd.read_csv(out).iloc[:, 2:].to_numpy()).all()


@pytest.mark.parametrize(
    ("what", "args", "words"),
    [
        ("no model", ["--model", "models:/nope@champion"], "cannot load the model"),
        ("no data", ["--data", "/nonexistent/rows.csv"], "not a file"),
        ("a folder", ["--data", "/"], "not a file"),
        ("empty data", ["--data", "EMPTY"], "the file is empty"),
        ("bad out", ["--out", "/proc/nope/out.csv"], "--out"),
        ("no store", [], "no MLflow store at"),
    ],
)
def test_bad_options_are_one_line(tracked, tmp_path, capsys, what, args, words):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    base = {
        "--model": f"models:/{tracked.models[1]}@champion",
        "--data": str(tracked.csv),
        "--out": str(tmp_path / "o.csv"),
    }
    if args:
        base[args[0]] = args[1].replace("EMPTY", str(empty))
    argv = ["predict", "--tracking-uri", tracked.uri, *[x for kv in base.items() for x in kv]]
    if what == "no store":
        argv[2] = f"sqlite:///{tmp_path / 'none' / 'mlflow.db'}"
    assert main(argv) == 2, what
    err = capsys.readouterr().err.strip()
    assert words in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "none").exists()


def test_an_unreachable_tracking_server_fails_before_any_work(data_dir, tmp_path, capsys):
    argv = ["run", "--data-dir", str(data_dir), "--tracking-uri", "http://127.0.0.1:9"]
    assert main([*argv, "--out", str(tmp_path / "r.json"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "--tracking-uri http://127.0.0.1:9: cannot open the MLflow store" in err
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize(
    ("content", "words"),
    [(b"", "holds no MLflow model registry (an empty database)"), (b"hello\n", "not an MLflow")],
)
def test_a_store_without_models_is_refused_and_left_as_it_was(tmp_path, capsys, content, words):
    from tests.fedcare_core.data.diabetes130.helpers import FIXTURE

    db = tmp_path / "x.db"
    db.write_bytes(content)  # `sqlite3 x.db ''` makes an empty file
    argv = ["predict", "--model", "models:/fedcare-x@champion", "--data", str(FIXTURE)]
    argv += ["--out", str(tmp_path / "o.csv"), "--tracking-uri", f"sqlite:///{db}"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1 and "Traceback" not in err
    assert db.read_bytes() == content and sorted(p.name for p in tmp_path.iterdir()) == ["x.db"]
