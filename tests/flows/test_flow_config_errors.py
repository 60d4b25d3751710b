"""Bad flow parameters: the flow run ends Failed with one clear line, before any work.

No dataset is loaded or checked (the tasks are replaced by ones that fail the test), no MLflow
run is created, nothing is written, and the flow run's log holds no traceback.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

import fedcare.tracking  # noqa: F401  (MLflow environment defaults before mlflow loads)
from fedcare_core.errors import ConfigError
from flows.experiment_flows import clients_flow, comparison_flow, disparity_flow
from flows.fedcare_flow import fedcare_pipeline
from flows.flow_parameters import FlowParameters

NAN, INF = float("nan"), float("inf")
FEDERATION_PATHS = {"federation_state_dir": "{tmp}/s", "federation_schema": "{tmp}/file"}


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"rho": NAN}, ("rho", "nan")),
        ({"rho": INF}, ("rho", "inf")),
        ({"rho": -INF}, ("rho", "-inf")),
        ({"rho": 1.5}, ("rho", "1.5")),
        ({"clients": -1}, ("clients", "-1")),
        ({"clients": 2.5}, ("clients", "2.5")),
        ({"rounds": True}, ("rounds", "true")),
        ({"max_patients": -5}, ("max_patients", "-5")),
        ({"stage2_epochs": 0}, ("stage2_epochs", "0")),
        ({"seeds": (-1,)}, ("seeds", "-1")),
        ({"seeds": (1.5,)}, ("seeds", "1.5")),
        ({"dataset": 3}, ("dataset",)),
        ({"overrides": {"stage1": {"local_lr": "x"}}}, ("stage1.local_lr", "'x'")),
        ({"overrides": {"stage1": {"local_lr": NAN}}}, ("stage1.local_lr", "nan")),
        ({"overrides": {"stage1": {"rounds": 2.5}}}, ("stage1.rounds", "2.5")),
        ({"overrides": {"data": {"cover_all_objectives": 1}}}, ("data.cover_all_objectives",)),
        ({"overrides": {"stage1": [1]}}, ("stage1", "JSON array")),
        ({"overrides": [1, 2]}, ("overrides", "JSON array")),
        ({"overrides": {"stage9": {}}}, ("stage9",)),
        ({"overrides": {"stage1": {"nope": 1}}}, ("nope",)),
        ({"overrides": {"seed": -3}}, ("seed", "-3")),
        ({"algorithms": ("nope",)}, ("unknown algorithm", "'nope'")),
    ],
)
def test_bad_flow_parameters_name_the_parameter(kwargs: dict[str, Any], words: tuple[str, ...]):
    with pytest.raises(ConfigError) as err:
        FlowParameters.of(**kwargs).validate()
    message = str(err.value)
    assert "\n" not in message and all(w in message for w in words), message


@pytest.mark.parametrize(
    ("document", "words"),
    [([1, 2], "JSON array"), ({"stage1": {"rounds": "5"}}, "stage1.rounds"), (None, "cannot")],
)
def test_a_bad_config_file_names_the_file(tmp_path: Path, document: object, words: str) -> None:
    path = tmp_path / "c.json"
    if document is not None:
        path.write_text(json.dumps(document))
    with pytest.raises(ConfigError) as err:
        FlowParameters.of(config_file=str(path)).validate()
    assert str(path) in str(err.value) and words in str(err.value)


@pytest.fixture
def no_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Replace the flows' data tasks by ones that fail the test if they are ever called."""

    class Refuse:
        def __call__(self, *args: object, **kwargs: object) -> None:
            raise AssertionError("work started before the parameters were checked")

        submit = __call__

    for module in ("flows.fedcare_flow", "flows.experiment_flows"):
        monkeypatch.setattr(f"{module}.validate_raw_task", Refuse())
    monkeypatch.setattr("flows.fedcare_flow.load_dataset_task", Refuse())
    monkeypatch.setattr("flows.parent_run.start_parent_run_task", Refuse())


def _flow_run_logs(flow_run_id: object) -> list[str]:
    """The flow run's log lines as the API holds them (they arrive in batches: wait for all)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    deadline = time.monotonic() + 30
    with get_client(sync_client=True) as client:
        while True:
            logs = client.read_logs(
                log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id]))
            )
            messages = [log.message for log in logs]
            # The flow run's own last line (a task run's "Finished in state" comes earlier).
            done = any(
                log.task_run_id is None and log.message.startswith("Finished in state")
                for log in logs
            )
            if done or time.monotonic() > deadline:
                return messages
            time.sleep(0.5)


def _assert_clean_failure(state: Any, words: tuple[str, ...]) -> None:
    assert state.is_failed()
    assert all(w in (state.message or "") for w in words), state.message
    with pytest.raises(ConfigError):
        state.result()
    logs = "\n".join(_flow_run_logs(state.state_details.flow_run_id))
    assert "Traceback" not in logs and "Encountered exception" not in logs, logs
    assert all(w in logs for w in words), logs


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"rho": NAN}, ("rho", "nan")),
        ({"overrides": {"stage1": {"local_lr": INF}}}, ("stage1.local_lr", "inf")),
        ({"overrides": {"stage1": {"rounds": "5"}}}, ("stage1.rounds",)),
        ({"out_dir": "{tmp}/file"}, ("out_dir", "is a file")),
        ({"reports_dir": "{tmp}/file/reports"}, ("reports_dir", "not a folder")),
        ({"stage1_cache_dir": "{tmp}/file"}, ("stage1_cache_dir", "is a file")),
        ({"min_sites": 3}, ("min_sites", "applies to backend 'federation' only")),
        (
            {"backend": "federation", "min_sites": 3, **FEDERATION_PATHS},
            ("clients", "not with backend 'federation'"),
        ),
        (
            {"backend": "federation", "clients": None, "federation_schema": "{tmp}/file"},
            ("backend 'federation' needs federation_state_dir",),
        ),
    ],
)
def test_the_fedcare_flow_fails_cleanly_before_any_work(
    prefect_harness: None,
    no_work: None,
    tmp_path: Path,
    kwargs: dict[str, Any],
    words: tuple[str, ...],
) -> None:
    (tmp_path / "file").write_text("")
    kwargs = {k: v.format(tmp=tmp_path) if isinstance(v, str) else v for k, v in kwargs.items()}
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    params: dict[str, Any] = {"reports_dir": str(tmp_path / "reports"), "clients": 3, **kwargs}
    state = fedcare_pipeline(tracking_uri=uri, rounds=2, return_state=True, **params)
    _assert_clean_failure(state, words)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]  # no MLflow store, no report


@pytest.mark.parametrize(
    ("flow", "kwargs", "words"),
    [
        (comparison_flow, {"algorithms": ["fedavg", "nope"]}, ("algorithms: unknown", "'nope'")),
        (clients_flow, {"counts": [3, 0]}, ("counts:", "≥ 2", "0")),
        (clients_flow, {"counts": [3, 5, 3]}, ("counts:", "3 given twice")),
        (disparity_flow, {"ratios": [0.2, NAN]}, ("ratios:", "nan")),
        (disparity_flow, {"ratios": [0.2, 1.0]}, ("ratios:", "(0, 1)", "1.0")),
        (comparison_flow, {"clients": 1}, ("clients must be ≥ 2", "1")),
        (comparison_flow, {"seeds": 0}, ("seeds must be ≥ 1",)),
        (comparison_flow, {"rounds": 0}, ("stage1.rounds",)),
        (comparison_flow, {"out_dir": "{tmp}/file"}, ("out_dir", "is a file")),
        (comparison_flow, {"out_dir": "{tmp}/file/sub"}, ("out_dir", "not a folder")),
        (comparison_flow, {"features": "nope"}, ("features:", "'nope'")),
        (comparison_flow, {"workers": 0}, ("workers must be ≥ 1",)),
    ],
)
def test_an_experiment_flow_checks_its_whole_grid_first(
    prefect_harness: None,
    no_work: None,
    tmp_path: Path,
    flow: Any,
    kwargs: dict[str, Any],
    words: tuple[str, ...],
) -> None:
    (tmp_path / "file").write_text("")
    kwargs = {k: v.format(tmp=tmp_path) if isinstance(v, str) else v for k, v in kwargs.items()}
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    params: dict[str, Any] = {"out_dir": str(tmp_path / "out"), **kwargs}
    params = {"seeds": 1, "workers": 1, **params}
    state = flow(tracking_uri=uri, return_state=True, **params)
    _assert_clean_failure(state, words)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]
