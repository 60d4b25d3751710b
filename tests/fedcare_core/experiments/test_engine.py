"""The experiment engine gives the reference path's numbers, and resumes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fedcare_core.data.loading import load_dataset
from fedcare_core.errors import DataError
from fedcare_core.experiments.engine import DataSpec, GridRun, run_cells
from fedcare_core.run.pipeline import run_experiment
from tests.fedcare_core.experiments.grid_fixtures import BASE, CELLS


def _without_timing(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k != "timing"}


def test_engine_documents_equal_run_experiment(tmp_path: Path, data_dir: Path):
    """The fast path (shared Stage 1, one load) = the reference path (Dask: tests/fedcare.grid)."""
    out = tmp_path / "cells"
    outcomes = run_cells(CELLS, BASE, DataSpec(str(data_dir)), out)
    assert [o.cell for o in outcomes] == CELLS
    loaded = load_dataset(BASE.data, data_dir)
    for outcome in outcomes:
        doc = json.loads(outcome.path.read_text())
        reference = run_experiment(
            loaded.cohort, loaded.partition, outcome.cell.config(BASE), source=loaded.source
        ).to_dict()
        assert _without_timing(doc) == json.loads(json.dumps(_without_timing(reference)))
    pair = {o.cell.algorithm: json.loads(o.path.read_text()) for o in outcomes[:2]}
    assert pair["fedcare"]["rounds"] == pair["fedcare-b"]["rounds"]
    assert pair["fedcare-b"]["stage2"] == [] and len(pair["fedcare"]["stage2"]) == 3


def test_written_cells_are_not_run_again(tmp_path: Path, data_dir: Path):
    spec = DataSpec(str(data_dir))
    first = run_cells(CELLS[:2], BASE, spec, tmp_path)
    stamp = [o.path.stat().st_mtime_ns for o in first]
    seen: list[str] = []
    again = run_cells(
        CELLS[:2], BASE, spec, tmp_path, on_done=lambda o, d, n: seen.append(o.cell.key)
    )
    assert all(o.skipped for o in again) and not seen
    assert [o.path.stat().st_mtime_ns for o in again] == stamp


def test_a_failing_job_raises_and_leaves_no_document(tmp_path: Path):
    spec = DataSpec(str(tmp_path / "missing"))
    with pytest.raises(DataError, match="path does not exist"):
        run_cells(CELLS[:1], BASE, spec, tmp_path / "out")
    assert not list((tmp_path / "out").glob("*.json"))
    assert not list((tmp_path / "out").glob(".*.tmp"))


def test_grid_bookkeeping_resolves_paths_and_plans_only_unwritten_cells(
    tmp_path: Path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rel").mkdir()
    (tmp_path / "rel" / f"{CELLS[2].key}.json").write_text("{}")
    grid = GridRun([*CELLS, CELLS[0]], "rel")
    assert grid.out == tmp_path / "rel" and grid.total == len(CELLS)
    assert [c for job in grid.jobs for c in job.cells if c == CELLS[2]] == []
    assert sum(len(job.cells) for job in grid.jobs) == len(CELLS) - 1
    assert DataSpec("rel").resolved().data_dir == str(tmp_path / "rel")
    assert DataSpec(None).resolved().data_dir is None


def test_the_engine_imports_no_scheduler_or_framework():
    """The core stays pure: Dask, Prefect, MLflow and Flower live in the layers above it."""
    code = (
        "import sys, fedcare_core.experiments.engine, fedcare_core.experiments.summary; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'dask', 'distributed', 'prefect', 'prefect_dask', 'mlflow', 'flwr', 'ray'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
