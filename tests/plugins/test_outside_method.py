"""An outside method, installed by pip alone, runs wherever FedCARE's own do (issue 53).

``tests/plugins/fedcare-median`` is a package of its own: FedAvg's rounds with a coordinate-wise
median as the server step, declared in its ``pyproject.toml`` under ``fedcare.algorithms``. Once
pip has installed it, ``fedcare run`` (local), ``fedcare run --sites``, ``fedcare experiment
comparison`` and ``fedcare predict`` take it with no file of the project changed. Flower's
backends and the ``fedcare`` flow: ``test_outside_method_federated.py`` (slow).
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from fedcare.cli.main import main
from fedcare_core.algorithms import algorithm_names
from tests.fedcare.sites.hospital_sites import write_hospital_sites

pytestmark = [
    pytest.mark.realdata,
    pytest.mark.filterwarnings("ignore:No complete tensor found:UserWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]
#: A small run of the built-in data (the slow module runs the same over Flower).
SMALL = ["--dataset", "diabetes130", "--clients", "3", "--rounds", "2", "--seed", "0"]
SMALL += ["--max-patients", "1500", "--quiet"]


def run_document(data_dir: Path, out: Path, algorithm: str, *extra: str) -> dict:
    """``fedcare run --algorithm A`` on :data:`SMALL`; its document."""
    argv = ["run", "--algorithm", algorithm, *SMALL, "--data-dir", str(data_dir)]
    assert main([*argv, *extra, "--out", str(out)]) == 0
    return json.loads(out.read_text())


def test_pip_installed_it_and_the_commands_offer_it(median, capsys):
    assert algorithm_names()[-1] == median  # after FedCARE's own
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    assert "local,pafnet,fedmedian}" in capsys.readouterr().out.replace("\n", "")


def test_it_runs_with_its_own_server_step_and_its_model_scores_raw_rows(median, data_dir, tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    own = run_document(data_dir, tmp_path / "m.json", median, "--tracking-uri", uri)
    fedavg = run_document(data_dir, tmp_path / "a.json", "fedavg")
    assert own["algorithm"] == median
    # The same rounds as FedAvg's but the median of the updates, not their weighted mean.
    assert len(own["rounds"]) == len(fedavg["rounds"]) == 2
    for a, b in zip(own["rounds"], fedavg["rounds"], strict=True):
        assert a["d_sq_norm"] != pytest.approx(b["d_sq_norm"], rel=1e-3)
    rows = _raw_rows(data_dir, tmp_path / "rows.csv", 200)
    out = tmp_path / "scores.csv"
    model = f"models:/{_registered(uri)[0]}@champion"
    assert main(["predict", "--model", model, "--tracking-uri", uri, "--data", str(rows),
                 "--out", str(out)]) == 0  # fmt: skip
    scores = pd.read_csv(out)
    assert len(scores) == 200 and list(scores.columns[:2]) == ["encounter_id", "patient_nbr"]
    assert scores.iloc[:, 2:].notna().all().all()


def test_it_runs_over_sites_and_in_the_comparison_grid(median, tmp_path, capsys):
    init = ["--rounds", "2", "--stage2-epochs", "2", "--set", "baselines.bound_epochs=2"]
    sites, schema = write_hospital_sites(tmp_path, init=init)
    over = ["--sites", str(sites), "--schema", str(schema)]
    out = tmp_path / "over-sites.json"
    assert main(["run", *over, "--algorithm", median, "--out", str(out), "--quiet"]) == 0
    assert json.loads(out.read_text())["algorithm"] == median
    grid = ["experiment", "comparison", *over, "--seeds", "1", "--workers", "1", "--quiet"]
    assert main([*grid, "--algorithms", f"fedavg,{median}", "--out", str(tmp_path / "g")]) == 0
    runs = pd.read_csv(tmp_path / "g" / "comparison" / "comparison_runs.csv")
    assert set(runs["algorithm"]) == {"fedavg", median}
    assert runs[["mortality", "readmission", "los"]].notna().all().all()


def _raw_rows(data_dir: Path, path: Path, n: int) -> Path:
    """The first ``n`` rows of the Diabetes 130 export, labels dropped, as a hospital's file."""
    with zipfile.ZipFile(data_dir / "diabetes130" / "dataset_diabetes.zip") as zf:
        data = zf.read("dataset_diabetes/diabetic_data.csv")
    path.write_bytes(data)
    rows = pd.read_csv(path, nrows=n, dtype=str, keep_default_na=False)
    rows.drop(columns=["time_in_hospital", "readmitted"]).to_csv(path, index=False)
    return path


def _registered(uri: str) -> list[str]:
    """The clients' registered models, in client order."""
    from fedcare.tracking import store

    store.configure(uri)
    found = store.client().search_registered_models()
    by_client = {int(m.tags["fedcare.client"]): m.name for m in found if "fedcare.client" in m.tags}
    return [by_client[k] for k in sorted(by_client)]
