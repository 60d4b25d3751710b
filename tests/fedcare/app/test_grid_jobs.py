"""A grid's jobs through the run service give the reference path's numbers, and resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fedcare.app.grid_jobs import run_cells
from fedcare.experiments.engine import DataSpec
from fedcare_core.data.loading import load_dataset
from fedcare_core.errors import DataError
from fedcare_core.run.pipeline import run_experiment
from tests.fedcare.experiments.grid_fixtures import BASE, CELLS


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


def test_two_label_choices_never_share_a_loaded_cohort(monkeypatch: pytest.MonkeyPatch):
    """The per-process cohort cache keys on every label option (``DataConfig.label_variants``)."""
    from dataclasses import replace

    from fedcare.app import grid_jobs

    loads: list[tuple[str, str, str]] = []

    def load(data, data_dir, *, verify_checksum):
        loads.append(data.label_variants)
        return object()

    monkeypatch.setattr(grid_jobs, "load_dataset", load)
    monkeypatch.setattr(grid_jobs, "_loaded", {})
    spec = DataSpec("somewhere")
    options = [
        {},
        {"early_discharge": "home"},
        {"early_discharge": "home-or-not"},
        {"readmission_exclude": "deaths-ama-transfers"},
        {"readmission": "any"},
    ]
    for data in options * 2:
        grid_jobs._dataset(replace(BASE, data=replace(BASE.data, **data)), spec)
    assert len(loads) == len(options) == len(set(loads))
