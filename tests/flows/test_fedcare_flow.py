"""The ``fedcare`` flow against a temporary Prefect server.

* Same metrics as ``fedcare run`` for the same configuration and seed, with Stage 2 run in
  parallel worker processes (their task runs overlap in time), and what MLflow then holds.
* A corrupted raw table stops the flow at validation, the failed expectation named, the report
  attached, and no MLflow run marked successful.
"""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path
from typing import Any

import pytest

import fedcare.tracking  # noqa: F401  (MLflow environment defaults before mlflow loads)
from fedcare.cli.main import main as fedcare_main
from fedcare.tracking.naming import config_setting_name
from flows.fedcare_flow import experiment_configs, fedcare_pipeline
from tests.tasks.test_data import write_clean_table

SMALL = {"clients": 3, "rounds": 3, "max_patients": 3000, "stage2_epochs": 3}


def _runs(uri: str) -> list[Any]:
    from mlflow.tracking import MlflowClient

    mc = MlflowClient(tracking_uri=uri)
    ids = [e.experiment_id for e in mc.search_experiments()]
    return list(mc.search_runs(ids)) if ids else []


def _task_runs(flow_run_id: Any, prefix: str, expected: int) -> list[Any]:
    """The flow run's task runs named ``prefix…`` (task runs are recorded from events)."""
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
                if r.name.startswith(prefix) and r.end_time is not None
            ]
            if len(runs) >= expected or time.monotonic() > deadline:
                return runs
            time.sleep(1.0)


@pytest.mark.slow
@pytest.mark.realdata
def test_flow_equals_fedcare_run_with_parallel_stage2(
    prefect_harness: None, data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow' / 'mlflow.db'}"
    state = fedcare_pipeline(
        data_dir=str(data_dir),
        **SMALL,
        tracking_uri=uri,
        reports_dir=str(tmp_path / "reports"),
        out_dir=str(tmp_path / "flow"),
        return_state=True,
    )
    assert state.is_completed(), state.message
    summary = state.result()
    flow_doc = json.loads((tmp_path / "flow" / "diabetes130-fedcare-seed0.json").read_text())

    cli_out = tmp_path / "cli.json"
    # The CLI run is for comparison only: not logged to the store the flow set in the environment.
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    argv = ["run", "--dataset", "diabetes130", "--data-dir", str(data_dir), "--seed", "0"]
    argv += ["--clients", "3", "--rounds", "3", "--max-patients", "3000", "--stage2-epochs", "3"]
    assert fedcare_main([*argv, "--out", str(cli_out), "--quiet"]) == 0
    cli_doc = json.loads(cli_out.read_text())
    for doc in (flow_doc, cli_doc):
        doc.pop("timing")
    assert flow_doc == cli_doc  # λ* of every round, μ*, every metric: identical

    # Stage 2 really ran concurrently: two worker processes, overlapping task runs.
    stage2 = _task_runs(state.state_details.flow_run_id, "stage2-client", 3)
    assert len(stage2) == 3 and all(r.state.is_completed() for r in stage2)
    spans = sorted((r.start_time, r.end_time) for r in stage2)
    assert any(b[0] < a[1] for a, b in itertools.pairwise(spans)), spans
    warm = _task_runs(state.state_details.flow_run_id, "warm-up-worker", 2)
    assert len(warm) >= 2

    # MLflow: parent FINISHED, one algorithm × seed run, one Stage 2 run per client.
    runs = _runs(uri)
    by_stage: dict[str, list[Any]] = {}
    for run in runs:
        by_stage.setdefault(run.data.tags.get("fedcare.stage", "?"), []).append(run)
    assert {k: len(v) for k, v in by_stage.items()} == {"flow": 1, "experiment": 1, "stage2": 3}
    parent, experiment = by_stage["flow"][0], by_stage["experiment"][0]
    assert all(r.info.status == "FINISHED" for r in runs)
    assert parent.info.run_id == summary["parent_run_id"]
    flow_run_id = str(state.state_details.flow_run_id)
    assert {r.data.tags["prefect.flow_run_id"] for r in runs} == {flow_run_id}
    assert experiment.data.tags["mlflow.parentRunId"] == parent.info.run_id
    assert parent.data.params["flow.clients"] == "3"
    assert experiment.data.metrics["test/early_discharge.auroc.pooled"] == pytest.approx(
        cli_doc["objectives"]["early_discharge"]["pooled"]
    )
    assert summary["runs"][0]["registry"]["promoted"] is True
    # One seed: the parent holds the mean (no std) and the seed count.
    assert parent.data.metrics["test_over_seeds/fedcare/early_discharge.auroc.pooled.mean"] == (
        pytest.approx(experiment.data.metrics["test/early_discharge.auroc.pooled"])
    )
    assert parent.data.metrics["test_over_seeds/fedcare/seeds"] == 1
    # ... and, one setting, that mean under the run's own key: the runs table's row is filled.
    assert parent.data.metrics["test/early_discharge.auroc.pooled"] == pytest.approx(
        experiment.data.metrics["test/early_discharge.auroc.pooled"]
    )
    setting = experiment.data.tags["fedcare.setting"]
    assert experiment.info.run_name == f"seed0 · {setting}"
    assert parent.info.run_name == f"flow · {setting} · seed 0"
    assert parent.data.tags["fedcare.setting"] == setting


def test_corrupted_table_stops_the_flow_at_validation(
    prefect_harness: None, tmp_path: Path
) -> None:
    df = write_clean_table(tmp_path / "data")
    df.loc[[2, 5], "readmitted"] = "SOMETIMES"
    df.to_csv(tmp_path / "data" / "diabetic_data.csv", index=False)
    uri = f"sqlite:///{tmp_path / 'mlflow' / 'mlflow.db'}"

    state = fedcare_pipeline(
        data_dir=str(tmp_path / "data"),
        clients=3,
        rounds=2,
        tracking_uri=uri,
        reports_dir=str(tmp_path / "reports"),
        verify_checksum=False,  # a modified file on purpose: the rows are what is refused
        return_state=True,
    )
    assert state.is_failed()
    with pytest.raises(Exception) as err:
        state.result()
    message = str(err.value)
    # The line `fedcare run` prints for the same file (file, column, rows), then the
    # failed expectations (counts).
    data_file = tmp_path / "data" / "diabetic_data.csv"
    assert message.splitlines()[0] == (
        f"file {data_file}; column 'readmitted'; rows 3, 6: readmitted must be one of NO, <30, >30"
    )
    assert "expect_column_values_to_be_in_set on column 'readmitted'" in message

    runs = _runs(uri)
    assert len(runs) == 1  # the parent only: no training run was ever created
    parent = runs[0]
    assert parent.info.status == "FAILED"
    # Named by what the flow run was to run; the Prefect flow run's id and name are tags.
    (config,) = experiment_configs(data_dir=str(tmp_path / "data"), clients=3, rounds=2)
    assert parent.info.run_name == f"flow · {config_setting_name(config)} · seed 0"
    assert parent.info.run_name.startswith("flow · fedcare-K3-T2")
    assert parent.data.tags["prefect.flow_run_id"] == str(state.state_details.flow_run_id)
    assert parent.data.tags["prefect.flow_run_name"]
    assert parent.data.tags["fedcare.failed_at"] == "validation"
    from mlflow.tracking import MlflowClient

    files = {a.path for a in MlflowClient(uri).list_artifacts(parent.info.run_id, "validation/raw")}
    assert "validation/raw/index.html" in files

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        artifacts = client.read_artifacts(
            flow_run_filter=FlowRunFilter(
                id=FlowRunFilterId(any_=[state.state_details.flow_run_id])
            )
        )
    raw = [a for a in artifacts if a.key == "validation-raw"]
    assert raw and "readmitted" in str(raw[0].data) and "FAILED" in str(raw[0].data)
    # The validation task itself is red in the graph, not green beside a failed flow.
    from prefect.client.schemas.filters import TaskRunFilter, TaskRunFilterName

    with get_client(sync_client=True) as client:
        (validation,) = client.read_task_runs(
            flow_run_filter=FlowRunFilter(
                id=FlowRunFilterId(any_=[state.state_details.flow_run_id])
            ),
            task_run_filter=TaskRunFilter(name=TaskRunFilterName(like_="validate-raw-tables")),
        )
    assert validation.state is not None and validation.state.is_failed()


@pytest.mark.slow
def test_a_dataset_defined_by_a_file_runs_through_the_flow(
    prefect_harness: None, tmp_path: Path
) -> None:
    """The hospital example (no Python added for it): validation, training, MLflow, results."""
    import shutil

    from examples.hospital.make_extract import make_extract

    example = Path(__file__).resolve().parents[2] / "examples" / "hospital" / "definition.yaml"
    shutil.copy(example, tmp_path / "definition.yaml")
    make_extract(1800, seed=5).to_csv(tmp_path / "encounters.csv.gz", index=False)
    uri = f"sqlite:///{tmp_path / 'mlflow' / 'mlflow.db'}"
    state = fedcare_pipeline(
        dataset=str(tmp_path / "definition.yaml"),
        clients=3,
        rounds=2,
        stage2_epochs=2,
        tracking_uri=uri,
        reports_dir=str(tmp_path / "reports"),
        out_dir=str(tmp_path / "flow"),
        return_state=True,
    )
    assert state.is_completed(), state.message
    doc = json.loads((tmp_path / "flow" / "riverside-fedcare-seed0.json").read_text())
    assert set(doc["objectives"]) == {"mortality", "readmission", "los"}
    runs = _runs(uri)
    assert runs and all(r.info.status == "FINISHED" for r in runs)
    assert {r.data.tags.get("fedcare.dataset") for r in runs} == {"riverside"}
    # The raw table's suite, generated from the definition, ran and passed.
    reports = list((tmp_path / "reports").rglob("*.json"))
    assert any("riverside_raw" in p.read_text() for p in reports)
