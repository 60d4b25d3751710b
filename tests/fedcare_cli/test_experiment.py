"""``fedcare experiment``: the grid on a local Dask cluster or a named one, and bad options."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fedcare_cli.main import EXIT_ERROR, main

TINY = ["--seeds", "1", "--clients", "3", "--rounds", "2", "--max-patients", "900"]
TINY += ["--stage2-epochs", "2", "--algorithms", "fedavg,local", "--quiet"]


@pytest.mark.realdata
def test_a_grid_on_the_local_cluster_resumes_from_its_documents(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["experiment", "comparison", "--data-dir", str(data_dir), "--out", str(tmp_path), *TINY]
    assert main([*argv, "--workers", "1"]) == 0
    assert "1 Dask worker(s) on a local cluster" in capsys.readouterr().out
    timing = json.loads((tmp_path / "timing_comparison.json").read_text())
    assert timing["workers"] == 1 and timing["dask_address"] is None
    assert timing["experiments"]["comparison"]["ran"] == 2
    table = (tmp_path / "comparison" / "comparison_runs.csv").read_text()
    assert main([*argv, "--workers", "2"]) == 0
    timing = json.loads((tmp_path / "timing_comparison.json").read_text())
    assert timing["workers"] == 2 and timing["experiments"]["comparison"]["ran"] == 0
    assert (tmp_path / "comparison" / "comparison_runs.csv").read_text() == table


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--workers", "0"], "workers must be ≥ 1"),
        (["--workers", "2", "--dask-address", "tcp://127.0.0.1:1"], "own workers"),
        (["--dask-address", "tcp://127.0.0.1:1"], "no Dask scheduler answers at tcp://127.0.0.1:1"),
    ],
)
def test_bad_cluster_options_fail_cleanly(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    options: list[str],
    message: str,
) -> None:
    monkeypatch.setattr("fedcare_grid.cluster.CONNECT_TIMEOUT_S", 1)
    argv = ["experiment", "comparison", "--data-dir", str(tmp_path), "--out", str(tmp_path)]
    assert main([*argv, *TINY, *options]) == EXIT_ERROR
    assert message in capsys.readouterr().err
    assert not list(tmp_path.rglob("*.json"))
