"""``fedcare run --run-dir`` / ``--resume``: what resume refuses, and folders of finished runs."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from fedcare.cli.main import main
from fedcare_core.config import DataConfig, ExperimentConfig, Stage1Config
from fedcare_core.errors import FedcareError
from fedcare_core.resume.run_folder import CHECKPOINT_FILE, RunData, RunFolder

QUICK = ["--clients", "3", "--rounds", "2", "--max-patients", "1500", "--quiet"]
#: The smallest document the results table prints.
DOCUMENT = {
    "algorithm": "fedcare",
    "dataset": "diabetes130",
    "objectives": {},
    "clients": [],
    "rounds": [],
    "timing": {"total_s": 1.0},
}


def _folder(tmp_path: Path, sha256: str = "0" * 64, data: str = "/nowhere") -> RunFolder:
    folder = RunFolder.create(tmp_path / "run")
    config = ExperimentConfig(data=DataConfig(clients=3), stage1=Stage1Config(rounds=2))
    folder.write_config(config, RunData(data, True, sha256))
    return folder


def test_resume_refuses_training_options(tmp_path, capsys):
    folder = _folder(tmp_path)
    assert main(["run", "--resume", str(folder.root), "--rounds", "5", "--no-verify"]) == 2
    err = capsys.readouterr().err
    assert "--resume takes no other training options (got --rounds, --no-verify)" in err
    assert err.count("\n") == 1


def test_resume_refuses_a_folder_without_config(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["run", "--resume", str(tmp_path / "empty")]) == 2
    assert "holds no config.json" in capsys.readouterr().err


def test_resume_refuses_an_invalid_config(tmp_path, capsys):
    folder = _folder(tmp_path)
    raw = json.loads(folder.config_path.read_text())
    raw["config"]["stage1"]["rounds"] = 0
    folder.config_path.write_text(json.dumps(raw))
    assert main(["run", "--resume", str(folder.root)]) == 2
    assert "invalid configuration" in capsys.readouterr().err


def test_run_dir_refuses_a_used_folder(tmp_path, capsys):
    folder = _folder(tmp_path)
    assert main(["run", "--run-dir", str(folder.root), *QUICK]) == 2
    assert "already exists and is not empty" in capsys.readouterr().err
    assert main(["run", "--run-dir", str(folder.root), "--backend", "flower-sim", *QUICK]) == 2
    assert "already exists and is not empty" in capsys.readouterr().err


def test_the_run_folder_records_a_flower_backend_and_its_options(tmp_path):
    from fedcare_core.resume.run_folder import RunBackend

    folder = RunFolder.create(tmp_path / "run")
    config = ExperimentConfig(data=DataConfig(clients=3), stage1=Stage1Config(rounds=2))
    backend = RunBackend("flower-deployment", {"round_timeout_s": 30.0, "node_poll_s": None})
    folder.write_config(config, RunData("/nowhere", True, "0" * 64), backend)
    assert RunFolder.open(folder.root).read_backend() == backend
    assert _folder(tmp_path / "old").read_backend() == RunBackend("local", {})
    raw = json.loads(folder.config_path.read_text())
    raw["backend"]["options"] = ["not", "a", "mapping"]
    folder.config_path.write_text(json.dumps(raw))
    with pytest.raises(FedcareError, match="invalid backend"):
        folder.read_backend()


def test_resume_of_a_complete_run_says_so(tmp_path, capsys):
    folder = _folder(tmp_path)
    folder.write_results(DOCUMENT)
    out = tmp_path / "copy.json"
    assert main(["run", "--resume", str(folder.root), "--out", str(out)]) == 0
    assert "is complete" in capsys.readouterr().out
    assert json.loads(out.read_text()) == DOCUMENT


@pytest.mark.realdata
def test_resume_refuses_changed_data(data_dir, tmp_path, capsys):
    from fedcare_core.data.diabetes130 import find_diabetes130

    folder = _folder(tmp_path, data=str(find_diabetes130(data_dir)))
    assert main(["run", "--resume", str(folder.root), "--quiet"]) == 2
    assert "the data changed since the run started" in capsys.readouterr().err


@pytest.mark.realdata
def test_run_dir_of_a_baseline_keeps_config_and_results(data_dir, tmp_path, capsys):
    run = tmp_path / "run"
    args = ["--data-dir", str(data_dir), "--algorithm", "fedavg", *QUICK]
    assert main(["run", "--run-dir", str(run), *args]) == 0
    assert sorted(p.name for p in run.iterdir()) == ["config.json", "results.json"]
    assert stat.S_IMODE(run.stat().st_mode) == 0o700
    assert not (run / CHECKPOINT_FILE).exists()
    assert main(["run", "--resume", str(run), "--quiet"]) == 0
    assert "is complete" in capsys.readouterr().out
