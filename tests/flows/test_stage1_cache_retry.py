"""A flow run retried after a failure past Stage 1 loads Stage 1 from the cache, not training.

The failure is real and deterministic: a folder stands where the flow writes its
``results.json`` (after Stage 1, Stage 2, the evaluation and the MLflow logging), so the
atomic rename fails with ``IsADirectoryError``. Prefect's ``retries`` run the flow again in the
same flow run; the second attempt's ``stage1`` task run is ``Cached``. Once the folder is
gone, the deployment's case (a new flow run with the same parameters) completes, its Stage 1
``Cached`` too, and its document equals ``fedcare run``'s.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

import fedcare.tracking  # noqa: F401  (MLflow environment defaults before mlflow loads)
from fedcare.cli.main import main as fedcare_main
from flows.fedcare_flow import fedcare_pipeline

SMALL = {"clients": 3, "rounds": 4, "max_patients": 3000, "stage2_epochs": 2}
RESULTS = "diabetes130-fedcare-seed0.json"


def _stage1_runs(flow_run_id: Any, expected: int) -> list[Any]:
    """The flow run's finished ``stage1`` task runs (recorded from events: poll a little)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    deadline = time.monotonic() + 60
    with get_client(sync_client=True) as client:
        while True:
            runs = [
                r
                for r in client.read_task_runs(
                    flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id]))
                )
                if r.name.startswith("stage1") and r.state is not None and r.state.is_final()
            ]
            if len(runs) >= expected or time.monotonic() > deadline:
                return sorted(runs, key=lambda r: r.start_time or r.expected_start_time)
            time.sleep(1.0)


@pytest.mark.slow
@pytest.mark.realdata
def test_retried_flow_run_does_not_redo_stage1(
    prefect_harness: None, data_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "flow"
    (out / RESULTS).mkdir(parents=True)  # the fault: results.json cannot be written
    params: dict[str, Any] = {
        "data_dir": str(data_dir),
        **SMALL,
        "tracking_uri": f"sqlite:///{tmp_path / 'mlflow' / 'mlflow.db'}",
        "reports_dir": str(tmp_path / "reports"),
        "out_dir": str(out),
        "stage1_cache_dir": str(tmp_path / "cache"),
        "register_model": False,
        "parallel_stage2": False,
    }
    retried = fedcare_pipeline.with_options(retries=1, retry_delay_seconds=0)
    state = retried(**params, return_state=True)
    assert state.is_failed() and "IsADirectoryError" in str(state.message), state.message
    runs = _stage1_runs(state.state_details.flow_run_id, 2)
    assert [r.state.name for r in runs] == ["Completed", "Cached"]

    (out / RESULTS).rmdir()
    state = fedcare_pipeline(**params, return_state=True)
    assert state.is_completed(), state.message
    assert [r.state.name for r in _stage1_runs(state.state_details.flow_run_id, 1)] == ["Cached"]
    flow_doc = json.loads((out / RESULTS).read_text())

    cli_out = tmp_path / "cli.json"
    argv = ["run", "--dataset", "diabetes130", "--data-dir", str(data_dir), "--seed", "0"]
    argv += ["--clients", "3", "--rounds", "4", "--max-patients", "3000", "--stage2-epochs", "2"]
    assert fedcare_main([*argv, "--out", str(cli_out), "--quiet"]) == 0
    cli_doc = json.loads(cli_out.read_text())
    for doc in (flow_doc, cli_doc):
        doc.pop("timing")
    assert flow_doc == cli_doc  # λ* of every round, μ*, every metric: identical
