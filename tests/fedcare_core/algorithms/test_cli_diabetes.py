"""Every baseline through ``fedcare run --algorithm X`` on Diabetes 130, subsampled."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fedcare.cli.main import main
from fedcare_core.algorithms import baseline_algorithms

ARGS = ["--dataset", "diabetes130", "--max-patients", "3000", "--rounds", "3", "--seed", "0"]


@pytest.fixture(scope="module")
def cached_loader(data_dir):
    """``load_dataset`` read once for the module: the CSV parse dominates a subsampled run."""
    from fedcare_core.data import loading as datasets

    cache: dict[tuple[object, ...], datasets.LoadedDataset] = {}
    original = datasets.load_dataset

    def load(config, root, *, verify_checksum=True):
        key = (config.dataset, config.readmission, str(root), verify_checksum)
        if key not in cache:
            cache[key] = original(config, root, verify_checksum=verify_checksum)
        return cache[key]

    mp = pytest.MonkeyPatch()
    mp.setattr(datasets, "load_dataset", load)
    yield data_dir
    mp.undo()


def _run(data_dir: Path, algorithm: str, out: Path) -> dict:
    # The bounds' epoch budget is cut (a config file, as a user would) to keep the suite quick.
    config = out.with_suffix(".config.json")
    config.write_text(json.dumps({"baselines": {"bound_epochs": 5}}))
    code = main(
        [
            "run",
            "--config",
            str(config),
            *ARGS,
            "--data-dir",
            str(data_dir),
            "--algorithm",
            algorithm,
            "--quiet",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    doc = json.loads(out.read_text())
    doc.pop("timing")
    return doc


@pytest.mark.realdata
@pytest.mark.parametrize("algorithm", baseline_algorithms())
def test_baseline_runs_on_diabetes_and_repeats_exactly(cached_loader, algorithm, tmp_path):
    doc = _run(cached_loader, algorithm, tmp_path / "a.json")
    assert doc["algorithm"] == algorithm and doc["dataset"] == "diabetes130"
    assert len(doc["clients"]) == 10
    assert set(doc["objectives"]) == {"early_discharge", "readmission", "los"}
    for rep in doc["objectives"].values():
        assert rep["pooled"] is not None
    assert len(doc["rounds"]) == (0 if algorithm in ("local", "centralised") else 3)
    assert doc["stage2"] == []
    assert _run(cached_loader, algorithm, tmp_path / "b.json") == doc
