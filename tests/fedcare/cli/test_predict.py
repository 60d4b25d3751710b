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
    labels = ["time_in_hospital", "readmitted"]
    # The export as a hospital writes it (text kept: 'None' is a value of max_glu_serum), and
    # the DataFrame pandas reads from it by default (as the README's Python example does).
    text = pd.read_csv(io.BytesIO(data), nrows=300, dtype=str, keep_default_na=False)
    text = text.drop(columns=labels)
    csv = root / "rows.csv"
    text.to_csv(csv, index=False)
    rows = pd.read_csv(csv)
    models = _client_models(uri)
    return SimpleNamespace(root=root, uri=uri, rows=rows, text=text, csv=csv, models=models)


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
    tracked.text.drop(columns=["age"]).to_csv(bad, index=False)
    assert _predict(tracked, "--data", str(bad), "--out", str(tmp_path / "o.csv")) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("fedcare: error: file ") and str(bad) in err and "'age'" in err
    assert len(err.splitlines()) == 1 and not (tmp_path / "o.csv").exists()

    rows = tracked.text.copy()
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


def _header_twice(rows: pd.DataFrame, path: Path) -> None:
    """``rows`` with a second ``age`` column (pandas would read the first, renaming the other)."""
    text = rows.to_csv(index=False).splitlines()
    lines = [text[0] + ",age"] + [line + ",[0-10)" for line in text[1:]]
    path.write_text("\n".join(lines) + "\n")


def _cell(column: str, rows: list[int], value: str):
    def change(frame: pd.DataFrame) -> None:
        frame.loc[rows, column] = value

    return change


def _copy_encounter(frame: pd.DataFrame) -> None:
    frame.loc[3, "encounter_id"] = frame.loc[2, "encounter_id"]


@pytest.mark.parametrize(
    ("change", "column", "words", "rows"),
    [
        # A value the definition says may not be missing (no gaps): refused, not imputed.
        (_cell("max_glu_serum", [4, 9], ""), "max_glu_serum", "max_glu_serum is missing", (5, 10)),
        (_cell("gender", [7], "?"), "gender", "gender is missing", (8,)),
        (_cell("num_medications", [2], ""), "num_medications", "num_medications is missing", (3,)),
        # Identifiers: empty, not of their form, an encounter twice (as a run refuses them).
        (_cell("encounter_id", [6], ""), "encounter_id", "encounter_id is missing", (7,)),
        (_cell("patient_nbr", [1, 2], "?"), "patient_nbr", "patient_nbr is missing", (2, 3)),
        (_cell("patient_nbr", [5], "P-12"), "patient_nbr", "patient_nbr", (6,)),
        (_copy_encounter, "encounter_id", "encounter_id repeats", (3, 4)),
    ],
)
def test_rows_a_run_refuses_are_refused_naming_column_and_rows(
    tracked, tmp_path, capsys, change, column, words, rows
):
    frame = tracked.text.copy()
    change(frame)
    bad = tmp_path / "bad.csv"
    frame.to_csv(bad, index=False)
    out = tmp_path / "scores.csv"
    assert _predict(tracked, "--data", str(bad), "--out", str(out)) == 2
    err = capsys.readouterr().err.strip()
    shown = ", ".join(str(r) for r in rows)
    assert err.startswith(f"fedcare: error: file {bad}; column '{column}'; row"), err
    assert f"{shown}: " in err and words in err and len(err.splitlines()) == 1
    assert not out.exists() and "Traceback" not in err
    for value in frame.loc[list(range(12)), ["encounter_id", "patient_nbr"]].to_numpy().ravel():
        assert not value or str(value) not in err.replace(str(bad), "")


def test_a_header_a_run_refuses_is_refused(tracked, tmp_path, capsys):
    """A column named twice (pandas would score the first), an identifier column absent."""
    bad = tmp_path / "bad.csv"
    _header_twice(tracked.text, bad)
    assert _predict(tracked, "--data", str(bad), "--out", str(tmp_path / "o.csv")) == 2
    err = capsys.readouterr().err.strip()
    assert "'age' appears twice in the header" in err and str(bad) in err
    tracked.text.drop(columns=["encounter_id"]).to_csv(bad, index=False)
    assert _predict(tracked, "--data", str(bad), "--out", str(tmp_path / "o.csv")) == 2
    err = capsys.readouterr().err.strip()
    assert "missing column(s): 'encounter_id'" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "o.csv").exists()


def test_a_gzipped_export_scores_as_the_plain_one(tracked, tmp_path):
    """``--data X.csv.gz`` as ``site prepare`` reads it; ``--out Y.csv.gz`` written gzipped."""
    import gzip

    packed = tmp_path / "rows.csv.gz"
    packed.write_bytes(gzip.compress(tracked.csv.read_bytes()))
    plain, zipped = tmp_path / "plain.csv", tmp_path / "scores.csv.gz"
    assert _predict(tracked, "--data", str(tracked.csv), "--out", str(plain)) == 0
    assert _predict(tracked, "--data", str(packed), "--out", str(zipped)) == 0
    assert gzip.decompress(zipped.read_bytes()) == plain.read_bytes()


@pytest.mark.parametrize("spelling", ["same", "dotted", "absolute", "symlink", "hardlink"])
def test_an_output_never_replaces_the_rows(tracked, tmp_path, monkeypatch, capsys, spelling):
    monkeypatch.chdir(tmp_path)
    rows = tmp_path / "rows.csv"
    rows.write_bytes(tracked.csv.read_bytes())
    out = {"same": "rows.csv", "dotted": "./rows.csv", "absolute": str(rows)}.get(spelling)
    if spelling == "symlink":
        (tmp_path / "link.csv").symlink_to(rows)
        out = "link.csv"
    if spelling == "hardlink":
        os.link(rows, tmp_path / "hard.csv")
        out = "hard.csv"
    assert out is not None
    assert _predict(tracked, "--data", "rows.csv", "--out", out) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"fedcare: error: --out {Path(out)} is --data rows.csv"), err
    assert rows.read_bytes() == tracked.csv.read_bytes()
    # Beside it, under another name: scored.
    assert _predict(tracked, "--data", "rows.csv", "--out", "rows-scored.csv") == 0
    assert rows.read_bytes() == tracked.csv.read_bytes()


def test_an_output_never_replaces_the_store_or_the_model(tracked, tmp_path, capsys):
    db = tracked.root / "mlflow.db"
    before = db.read_bytes()
    assert _predict(tracked, "--data", str(tracked.csv), "--out", str(db)) == 2
    assert "--tracking-uri" in capsys.readouterr().err and db.read_bytes() == before
    mlflow.set_tracking_uri(tracked.uri)
    folder = mlflow.artifacts.download_artifacts(
        f"models:/{tracked.models[0]}@champion", dst_path=str(tmp_path / "model")
    )
    mlmodel = Path(folder) / "MLmodel"
    argv = ["predict", "--model", folder, "--data", str(tracked.csv), "--out", str(mlmodel)]
    assert main(argv) == 2
    assert f"is a file of --model {folder}" in capsys.readouterr().err
    assert b"python_function" in mlmodel.read_bytes()
