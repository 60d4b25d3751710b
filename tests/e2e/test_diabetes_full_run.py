"""The issue's acceptance run: Diabetes 130, 10 clients, 100 rounds, seed 0 (slow, ~1 min each).

Thresholds are the project's acceptance criteria (not the paper's numbers): pooled AUROC ≥ 0.78
for early discharge, ≥ 0.62 for 30-day readmission, LOS MAE ≤ 2.0 days. The same command twice
must give identical results.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.realdata]


def _run(data_dir: Path, out: Path) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "fedcare.cli",
        "run",
        "--dataset",
        "diabetes130",
        "--data-dir",
        str(data_dir),
        "--clients",
        "10",
        "--rounds",
        "100",
        "--seed",
        "0",
        "--quiet",
        "--out",
        str(out),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=900)
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text())


def test_full_run_meets_targets_and_is_deterministic(data_dir, tmp_path):
    first = _run(data_dir, tmp_path / "a.json")
    obj = first["objectives"]
    assert obj["early_discharge"]["pooled"] >= 0.78
    assert obj["readmission"]["pooled"] >= 0.62
    assert obj["los"]["pooled"] <= 2.0
    assert len(first["rounds"]) == 100
    second = _run(data_dir, tmp_path / "b.json")
    for doc in (first, second):
        doc.pop("timing")
    assert first == second
