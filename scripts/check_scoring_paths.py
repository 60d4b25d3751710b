"""Score the same raw rows through every path a user has, and compare the predictions.

Takes a registered client model (default: client 0's ``champion`` of FedCARE on Diabetes
130-US, as ``make run`` registers it: ``fedcare-diabetes130-fedcare-early_discharge-client0``,
client 0 of seed 0 at K = 10 predicting early discharge) and the first rows of
``diabetic_data.csv`` with ``time_in_hospital`` and ``readmitted`` removed, and scores them

1. with ``fedcare predict`` (a subprocess, as a user runs it);
2. with ``mlflow.pyfunc.load_model(uri).predict(df)``;
3. over HTTP: ``mlflow models serve --env-manager local`` on a loopback port, ``POST
   /invocations``;
4. in process: the model version's run configuration is trained again here (runs are
   deterministic), and the client's encoders and predictor score the rows in memory, as the
   in-process evaluation does.

It prints a Markdown report: rows, columns, whether each pair is identical, the largest
difference, and seconds per path (``--report FILE`` also writes it).

    python scripts/check_scoring_paths.py --tracking-uri http://127.0.0.1:5000 \
        --data-dir ../shared/datasets --report docs/SCORING.md
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import httpx
import numpy as np
import pandas as pd

import fedcare.tracking  # noqa: F401  (MLflow telemetry off before mlflow loads)

BIN = Path(sys.executable).parent
#: The model's output columns: predictions and length-of-stay interval ends.
_OUTPUT_SUFFIXES = ("_probability", "_days", "_days_low", "_days_high")


def _rows(data_dir: Path, n: int) -> pd.DataFrame:
    archive = next(Path(data_dir).glob("diabetes130/*.zip"))
    with zipfile.ZipFile(archive) as zf:
        name = next(m for m in zf.namelist() if m.endswith("diabetic_data.csv"))
        data = zf.read(name)
    text = pd.read_csv(io.BytesIO(data), nrows=n, dtype=str, keep_default_na=False)
    # Written as exported (text kept: 'None' is a value of max_glu_serum, refused empty as a
    # run refuses it), then read back with pandas' defaults, as a user's DataFrame is.
    csv = io.StringIO(text.drop(columns=["time_in_hospital", "readmitted"]).to_csv(index=False))
    return pd.read_csv(csv)


def _cli(model: str, uri: str, rows: pd.DataFrame, folder: Path) -> pd.DataFrame:
    csv, out = folder / "rows.csv", folder / "pred.csv"
    rows.to_csv(csv, index=False, na_rep="None")  # the export's text back: only 'None' read as NaN
    argv = [str(BIN / "fedcare"), "predict", "--model", model, "--data", str(csv)]
    subprocess.run([*argv, "--out", str(out), "--tracking-uri", uri], check=True)
    return pd.read_csv(out)


def _served(model: str, uri: str, rows: pd.DataFrame, folder: Path) -> pd.DataFrame:
    from fedcare.procs.ports import free_port
    from fedcare.procs.services import start_detached, stop_group, wait_http
    from fedcare.stack.settings import LOOPBACK, OFFLINE_ENV

    port = free_port(LOOPBACK)
    env = {**os.environ, **OFFLINE_ENV, "MLFLOW_TRACKING_URI": uri}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    argv = [str(BIN / "mlflow"), "models", "serve", "-m", model, "--env-manager", "local"]
    argv += ["--host", LOOPBACK, "--port", str(port)]
    log = folder / "serve.log"
    pid = start_detached(argv, env=env, log=log, pid_file=folder / "serve.pid", cwd=folder)
    try:
        url = f"http://{LOOPBACK}:{port}"
        if not wait_http(f"{url}/ping", 300, pid=pid):
            raise SystemExit(f"mlflow models serve did not start:\n{log.read_text()[-3000:]}")
        body = {"dataframe_split": json.loads(rows.to_json(orient="split", index=False))}
        reply = httpx.post(f"{url}/invocations", json=body, timeout=120)
        reply.raise_for_status()
        return pd.DataFrame(reply.json()["predictions"])
    finally:
        stop_group(pid)


def _in_process(model: str, uri: str, data_dir: Path, rows: pd.DataFrame) -> pd.DataFrame:
    """Train the version's run configuration again here and score with the client's package."""
    import mlflow

    from fedcare.tracking import store
    from fedcare_core.config import ExperimentConfig
    from fedcare_core.data.loading import load_dataset
    from fedcare_core.run.packaging import client_package
    from fedcare_core.run.pipeline import run_experiment

    store.configure(uri)
    mc = store.client()
    name, alias = model.removeprefix("models:/").split("@")
    version = mc.get_model_version_by_alias(name, alias)
    client = int(version.tags["fedcare.client"])
    folder = mlflow.artifacts.download_artifacts(
        run_id=version.run_id, artifact_path="results.json"
    )
    doc = json.loads(Path(folder).read_text())
    config = ExperimentConfig.from_dict(doc["config"])
    loaded = load_dataset(config.data, data_dir)
    result = run_experiment(loaded.cohort, loaded.partition, config, source=loaded.source)
    index = [c.client_id for c in result.federation.clients].index(client)
    return client_package(result, index).score(rows)


def _compare(a: pd.DataFrame, b: pd.DataFrame) -> tuple[bool, float]:
    x, y = a.to_numpy(dtype=np.float64), b.to_numpy(dtype=np.float64)
    same = (x == y) | (np.isnan(x) & np.isnan(y))  # an interval end is NaN on every path or none
    gap = np.abs(x - y)
    return bool(same.all()), float(np.where(same, 0.0, gap).max()) if gap.size else 0.0


def main() -> int:
    """Score through the four paths and report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tracking-uri", required=True)
    parser.add_argument("--data-dir", type=Path, default=Path("../shared/datasets"))
    parser.add_argument(
        "--model", default="models:/fedcare-diabetes130-fedcare-early_discharge-client0@champion"
    )
    parser.add_argument("--rows", type=int, default=300)
    parser.add_argument("--report", type=Path)
    args = parser.parse_args()
    import mlflow.pyfunc

    rows = _rows(args.data_dir, args.rows)
    seconds: dict[str, float] = {}
    outputs: dict[str, pd.DataFrame] = {}
    with tempfile.TemporaryDirectory(prefix="fedcare-scoring-") as tmp:
        for path, score in [
            ("fedcare predict", lambda: _cli(args.model, args.tracking_uri, rows, Path(tmp))),
            ("pyfunc", lambda: mlflow.pyfunc.load_model(args.model).predict(rows)),
            ("HTTP", lambda: _served(args.model, args.tracking_uri, rows, Path(tmp))),
            ("in process", lambda: _in_process(args.model, args.tracking_uri, args.data_dir, rows)),
        ]:
            if path == "pyfunc":
                mlflow.set_tracking_uri(args.tracking_uri)
            t0 = time.perf_counter()
            out = score()
            seconds[path] = time.perf_counter() - t0
            outputs[path] = out.loc[:, [c for c in out.columns if c.endswith(_OUTPUT_SUFFIXES)]]
    columns = list(outputs["pyfunc"].columns)
    lines = [
        f"Model `{args.model}` ({args.tracking_uri}), the first {len(rows)} rows of "
        "`diabetic_data.csv` without `time_in_hospital` and `readmitted`; outputs "
        f"{', '.join(f'`{c}`' for c in columns)}.",
        "",
        "| path | seconds | identical to pyfunc | max abs difference |",
        "| --- | --- | --- | --- |",
    ]
    for path, out in outputs.items():
        same, diff = _compare(out, outputs["pyfunc"])
        lines.append(f"| {path} | {seconds[path]:.1f} | {'yes' if same else 'no'} | {diff:.3g} |")
    values = outputs["pyfunc"].to_numpy()
    lines += [
        "",
        f"Predictions: min {values.min():.4f}, mean {values.mean():.4f}, max {values.max():.4f}.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.report is not None:
        args.report.write_text(text)
    return 0 if all(_compare(o, outputs["pyfunc"])[0] for o in outputs.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
