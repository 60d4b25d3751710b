"""The engine's pure pieces: a grid's bookkeeping, and no scheduler or framework imported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from fedcare.experiments.engine import DataSpec, GridRun
from tests.fedcare.experiments.grid_fixtures import CELLS


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
        "import sys, fedcare.experiments.engine, fedcare.experiments.summary; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'dask', 'distributed', 'prefect', 'prefect_dask', 'mlflow', 'flwr', 'ray'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
