"""``fedcare experiment``: the grid on a local Dask cluster or a named one, and bad options."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fedcare.cli.main import EXIT_ERROR, main

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
        (
            ["--dask-address", "tcp://127.0.0.1:1"],
            "--dask-address: no Dask scheduler answers at tcp://127.0.0.1:1",
        ),
        # not an address at all: refused before any connection (and in one line)
        (["--dask-address", "not-an-address"], "--dask-address must be"),
        (["--dask-address", "tcp://host:port"], "got 'tcp://host:port'"),
        (["--dask-address", "tcp://:8786"], "--dask-address must be"),
        (["--dask-address", "tcp://10.0.0.5:0"], "--dask-address must be"),
        (["--dask-address", "tcp://10.0.0.5:70000"], "--dask-address must be"),
        (["--dask-address", "inproc://x"], "--dask-address must be"),
        (["--dask-address", "smtp://10.0.0.5:25"], "--dask-address must be"),
    ],
)
def test_bad_cluster_options_fail_cleanly(
    data_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    options: list[str],
    message: str,
) -> None:
    monkeypatch.setattr("fedcare.grid.cluster.CONNECT_TIMEOUT_S", 1)
    data = str(data_dir / "diabetes130")  # checked before the cluster is reached
    argv = ["experiment", "comparison", "--data-dir", data, "--out", str(tmp_path)]
    assert main([*argv, *TINY, *options]) == EXIT_ERROR
    err = capsys.readouterr().err
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert not list(tmp_path.rglob("*.json"))


def test_bad_data_is_refused_before_any_cluster_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["experiment", "comparison", "--data-dir", str(tmp_path / "nowhere")]
    assert main([*argv, "--out", str(tmp_path / "out"), *TINY, "--workers", "1"]) == EXIT_ERROR
    captured = capsys.readouterr()
    err = captured.err
    assert "nowhere" in err and len(err.splitlines()) == 1, err
    assert "Dask worker" not in captured.out  # no cluster was started
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").rglob("*"))


@pytest.mark.parametrize(
    "address", ["tcp://10.0.0.5:8786", "10.0.0.5:8786", "tls://sched.lan:8786", "tcp://[::1]:1"]
)
def test_a_scheduler_address_in_dasks_forms_passes_the_check(address: str) -> None:
    from fedcare.grid.cluster import check_address

    assert check_address(address, "--dask-address") == address
