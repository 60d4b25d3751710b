"""``mlflow models serve`` answers ``/invocations`` with raw rows as ``fedcare predict`` does.

A small real run is logged with ``fedcare run --tracking-uri``; client 0's champion is served
on a loopback port (``--env-manager local``, as the README shows) and sent the first 300 rows
of ``diabetic_data.csv`` without labels over HTTP: the predictions are identical to
``fedcare predict``'s and to ``mlflow.pyfunc.load_model(...).predict``'s, and a row that cannot
be scored is answered 400 with the FedCARE message and no row of the input.
"""

from __future__ import annotations

import io
import json
import os
import sys
import zipfile
from pathlib import Path

import httpx
import mlflow.pyfunc
import pandas as pd
import pytest

from fedcare.cli.main import main
from fedcare.procs.ports import free_port
from fedcare.procs.services import start_detached, stop_group, wait_http
from fedcare.stack.settings import LOOPBACK, OFFLINE_ENV

pytestmark = [pytest.mark.slow, pytest.mark.realdata]


def _client_model(uri: str, client: int) -> str:
    """``models:/<name>@champion`` of a client's model (its name says what it predicts)."""
    from mlflow.tracking import MlflowClient

    found = MlflowClient(uri, registry_uri=uri).search_registered_models()
    (name,) = [m.name for m in found if m.tags.get("fedcare.client") == str(client)]
    assert name.startswith("fedcare-diabetes130-fedcare-") and name.endswith(f"-client{client}")
    return f"models:/{name}@champion"


def _export(data_dir: Path, csv: Path) -> pd.DataFrame:
    """The first 300 rows unlabelled, written to ``csv`` as exported (text kept: 'None' is a
    value of max_glu_serum, which a run refuses empty), read back with pandas' defaults."""
    with zipfile.ZipFile(data_dir / "diabetes130" / "dataset_diabetes.zip") as zf:
        data = zf.read("dataset_diabetes/diabetic_data.csv")
    text = pd.read_csv(io.BytesIO(data), nrows=300, dtype=str, keep_default_na=False)
    text.drop(columns=["time_in_hospital", "readmitted"]).to_csv(csv, index=False)
    return pd.read_csv(csv)


def _post(url: str, rows: pd.DataFrame) -> httpx.Response:
    body = {"dataframe_split": json.loads(rows.to_json(orient="split", index=False))}
    return httpx.post(f"{url}/invocations", json=body, timeout=60)


def test_served_model_answers_raw_rows_like_predict_and_pyfunc(data_dir, tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    run = ["run", "--data-dir", str(data_dir), "--clients", "3", "--rounds", "2", "--quiet"]
    assert (
        main([*run, "--max-patients", "1500", "--stage2-epochs", "2", "--tracking-uri", uri]) == 0
    )
    model = _client_model(uri, 0)
    csv, out = tmp_path / "rows.csv", tmp_path / "pred.csv"
    rows = _export(data_dir, csv)
    predict = ["predict", "--model", model, "--data", str(csv), "--out", str(out)]
    assert main([*predict, "--tracking-uri", uri]) == 0
    cli = pd.read_csv(out)
    mlflow.set_tracking_uri(uri)
    python = mlflow.pyfunc.load_model(model).predict(rows)

    port = free_port(LOOPBACK)
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, **OFFLINE_ENV, "MLFLOW_TRACKING_URI": uri}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"  # uvicorn of this environment
    argv = [str(Path(bin_dir) / "mlflow"), "models", "serve", "-m", model]
    argv += ["--env-manager", "local", "--host", LOOPBACK, "--port", str(port)]
    log = tmp_path / "serve.log"
    pid = start_detached(argv, env=env, log=log, pid_file=tmp_path / "serve.pid", cwd=tmp_path)
    try:
        url = f"http://{LOOPBACK}:{port}"
        assert wait_http(f"{url}/ping", 180, pid=pid), log.read_text()[-3000:]
        reply = _post(url, rows)
        assert reply.status_code == 200, reply.text[:2000]
        served = pd.DataFrame(reply.json()["predictions"])
        assert list(served.columns) == list(python.columns)
        assert (served.to_numpy() == python.to_numpy()).all()
        assert (cli[list(python.columns)].to_numpy() == python.to_numpy()).all()

        bad = rows.copy()
        bad["race"] = bad["race"].astype(object)
        bad.loc[6, "race"] = "Martian"
        reply = _post(url, bad)
        assert reply.status_code == 400
        # FedCARE's line is the reply's message, not the end of a traceback.
        assert "column 'race'; row 7" in reply.json()["message"]
        assert "stack_trace" not in reply.json()
        assert "Martian" not in reply.text
        assert not any(str(v) in reply.text for v in rows["encounter_id"].head(50))
    finally:
        stop_group(pid)
    assert "Martian" not in log.read_text()
