"""The outside method over Flower's two backends and in the ``fedcare`` flow (slow).

The pip-installed ``fedmedian`` (``tests/plugins/fedcare-median``) runs its rounds on
flower-sim and flower-deployment (Ray actors, then SuperLink and SuperNode processes, each
finding it by its entry point) with the in-process run's numbers, and the ``fedcare`` flow runs
it under Prefect. No file of the project names it.
"""

from __future__ import annotations

import json

import pytest

from flows.fedcare_flow import fedcare_pipeline
from tests.plugins.test_outside_method import run_document

pytestmark = [
    pytest.mark.slow,
    pytest.mark.realdata,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]
#: Flower's clients train in other processes (other thread counts): float32 rounding apart.
TOLERANCE = 1e-4


@pytest.mark.parametrize("backend", ["flower-sim", "flower-deployment"])
def test_flowers_backends_run_it_with_the_in_process_numbers(median, data_dir, tmp_path, backend):
    local = run_document(data_dir, tmp_path / "local.json", median)
    flower = run_document(data_dir, tmp_path / "flower.json", median, "--backend", backend)
    assert flower["algorithm"] == median
    for a, b in zip(local["rounds"], flower["rounds"], strict=True):
        assert b["d_sq_norm"] == pytest.approx(a["d_sq_norm"], rel=TOLERANCE)
    for name, scores in local["objectives"].items():
        assert flower["objectives"][name]["pooled"] == pytest.approx(scores["pooled"], abs=1e-3)


def test_the_flow_runs_it(prefect_harness, median, data_dir, tmp_path):
    state = fedcare_pipeline(
        data_dir=str(data_dir),
        algorithm=median,
        clients=3,
        rounds=2,
        max_patients=1500,
        tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}",
        reports_dir=str(tmp_path / "reports"),
        out_dir=str(tmp_path / "flow"),
        return_state=True,
    )
    assert state.is_completed(), state.message
    (document,) = (tmp_path / "flow").glob(f"*{median}*.json")
    local = run_document(data_dir, tmp_path / "local.json", median)
    flow = json.loads(document.read_text())
    for doc in (flow, local):
        doc.pop("timing")
    assert flow == local
