"""``fedcare experiment comparison|ablation --sites``: a grid over sites on a local Dask cluster.

The cells run on a Dask worker (another process, which reads the sites' files itself); their
documents are the in-process reference's (``tests/fedcare/app/test_grid_sites.py`` checks
those against ``fedcare run --sites``). A refusal is one line, exit status 2, nothing written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from fedcare.cli.main import EXIT_ERROR, main
from tests.fedcare.sites.hospital_sites import write_hospital_sites

_INIT = ["--rounds", "2", "--stage2-epochs", "2", "--set", "baselines.bound_epochs=2"]


@pytest.fixture(scope="module")
def sites_args(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    sites, schema = write_hospital_sites(tmp_path_factory.mktemp("hospitals"), init=_INIT)
    return ["--sites", str(sites), "--schema", str(schema)]


def test_the_comparison_over_sites_runs_on_the_cluster_and_resumes(
    sites_args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["experiment", "comparison", *sites_args, "--seeds", "1", "--out", str(tmp_path)]
    argv += ["--algorithms", "fedcare,fedavg,local", "--workers", "1", "--quiet"]
    assert main(argv) == 0
    assert "comparison: 3 runs" in capsys.readouterr().out
    runs = pd.read_csv(tmp_path / "comparison" / "comparison_runs.csv")
    assert set(runs["algorithm"]) == {"fedcare", "fedavg", "local"}
    assert runs[["mortality", "readmission", "los"]].notna().all().all()
    assert "# comparison — riverside" in (tmp_path / "comparison" / "comparison.md").read_text()
    (store,) = (tmp_path / "cells").iterdir()
    assert "-sites-" in store.name and len(list(store.glob("*.json"))) == 3
    assert main(argv) == 0  # every cell written: none runs again
    timing = json.loads((tmp_path / "timing_comparison.json").read_text())
    assert timing["experiments"]["comparison"]["ran"] == 0


@pytest.mark.parametrize(
    ("name", "extra", "message"),
    [
        ("comparison", ["--clients", "4"], "--clients: decided by the sites"),
        ("ablation", ["--no-verify", "--features", "admission"], "--features, --no-verify: "),
        ("comparison", ["--dataset", "mimic3"], "--dataset: decided by the sites"),
        ("clients", [], "--sites: a grid over sites runs comparison or ablation"),
        ("disparity", [], "the disparity experiment sweeps ρ"),
        ("programme", [], "the programme's clients experiment"),
    ],
)
def test_what_the_sites_decide_is_refused_in_one_line(
    sites_args: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    extra: list[str],
    message: str,
) -> None:
    argv = ["experiment", name, *sites_args, *extra, "--out", str(tmp_path / "out")]
    assert main(argv) == EXIT_ERROR
    err = capsys.readouterr().err
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert not (tmp_path / "out").exists()


def test_sites_without_a_schema_is_refused(
    sites_args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["experiment", "ablation", *sites_args[:2], "--out", str(tmp_path / "out")]
    assert main(argv) == EXIT_ERROR
    assert "--sites and --schema go together" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
