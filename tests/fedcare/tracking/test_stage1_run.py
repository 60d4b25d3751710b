"""A coordinator's Stage 1 document in MLflow: top level, or nested under a flow's parent run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

import fedcare.tracking  # noqa: F401  (sets the MLflow environment defaults before mlflow loads)


def _document() -> dict[str, Any]:
    """A Stage 1 document as :func:`fedcare.sites.federation_run.stage1_document` writes it."""
    rounds = [
        {
            "round": r,
            "lambda": {"readmission": lam, "los": 1 - lam},
            "d_sq_norm": 0.5 / r,
            "loss": {"readmission": 0.6, "los": 0.9},
            "participants": [0, 1],
            "missing_objectives": [],
            "participant_sites": ["a", "b"],
        }
        for r, lam in ((1, 0.8), (2, 0.9))
    ]
    return {
        "format": "fedcare-stage1/1", "run_name": "fedcare-test-seed0", "dataset": "diabetes130",
        "algorithm": "fedcare", "schema_digest": "d" * 64, "seed": 0,
        "config": {"stage1": {"rounds": 2}, "model": {"hidden": 8}},
        "objectives": ["readmission", "los"],
        "sites": [{"name": "a", "client_id": 0, "objectives": ["readmission"]},
                  {"name": "b", "client_id": 1, "objectives": ["los"]}],
        "rounds": rounds, "rounds_run": 2, "converged": False, "notes": [],
        "w_star_sha256": "e" * 64, "timing": {"wait_for_sites_s": 1.0, "stage1_s": 2.0},
    }  # fmt: skip


def test_a_stage1_run_nests_under_a_parent_with_the_given_tags(tmp_path: Path) -> None:
    from mlflow.tracking import MlflowClient

    from fedcare.tracking import store
    from fedcare.tracking.stage1_run import log_stage1_run

    uri = store.configure(store.default_tracking_uri(tmp_path))
    result_dir = tmp_path / "result"
    result_dir.mkdir()
    np.savez(result_dir / "stage1.npz", params=np.zeros(3))
    parent = store.start_parent_run("diabetes130", run_name="flow", tags={})
    nested = log_stage1_run(
        _document(), result_dir, parent_run_id=parent,
        tags={"fedcare.entry": "a flow", "prefect.flow_run_id": "f1"},
    )  # fmt: skip
    alone = log_stage1_run(_document(), result_dir)
    store.finish_run(parent)

    mc = MlflowClient(tracking_uri=uri)
    run = mc.get_run(nested)
    assert run.info.status == "FINISHED"
    assert run.info.experiment_id == mc.get_run(parent).info.experiment_id
    assert run.data.tags["mlflow.parentRunId"] == parent
    assert run.data.tags["fedcare.entry"] == "a flow"
    assert run.data.tags["prefect.flow_run_id"] == "f1"
    assert run.data.tags["fedcare.backend"] == "federation"
    # The seed first in the name (the runs table cuts long names); the document's name kept.
    assert run.info.run_name == "seed0 · fedcare-test"
    assert run.data.tags["fedcare.run_name"] == "fedcare-test-seed0"
    history = mc.get_metric_history(nested, "lambda/readmission")
    steps = sorted((m.step, m.value) for m in history)
    assert steps == [(1, 0.8), (2, 0.9)]
    assert len(mc.get_metric_history(nested, "stage1/d_sq_norm")) == 2
    assert {a.path for a in mc.list_artifacts(nested, "stage1")} == {"stage1/stage1.npz"}
    top = mc.get_run(alone).data.tags
    assert "mlflow.parentRunId" not in top and top["fedcare.entry"] == "fedcare federation run"


def test_rounds_logged_live_show_while_running_and_are_not_logged_twice(tmp_path: Path) -> None:
    from mlflow.tracking import MlflowClient

    from fedcare.tracking import store
    from fedcare.tracking.stage1_run import LiveRounds, log_stage1_run, open_stage1_run

    uri = store.configure(store.default_tracking_uri(tmp_path))
    document = _document()
    head = {k: document[k] for k in ("run_name", "dataset", "algorithm", "schema_digest", "seed")}
    live = LiveRounds(lambda: open_stage1_run(head), warn=lambda text: None)
    assert live.run_id is None  # nothing opened while the sites are awaited
    live(document["rounds"][0])  # round 1 ended; round 2 runs
    assert live.run_id is not None
    mc = MlflowClient(tracking_uri=uri)
    running = mc.get_run(live.run_id)
    assert running.info.status == "RUNNING"
    assert [m.step for m in mc.get_metric_history(live.run_id, "lambda/readmission")] == [1]
    assert "fedcare.sites" not in running.data.tags  # not known before the sites answered
    result_dir = tmp_path / "result"
    result_dir.mkdir()
    assert log_stage1_run(document, result_dir, live=live) == live.run_id
    done = mc.get_run(live.run_id)
    assert done.info.status == "FINISHED" and done.data.tags["fedcare.sites"] == "2"
    assert running.data.tags["fedcare.kind"] == "stage1-federation"  # from the start
    assert done.data.tags["fedcare.setting"] == "fedcare-K2-T2-stage1-over-sites"
    assert "by design" in done.data.tags["mlflow.note.content"]  # said once the sites answered
    history = mc.get_metric_history(live.run_id, "lambda/readmission")
    assert sorted((m.step, m.value) for m in history) == [(1, 0.8), (2, 0.9)]  # each once


def test_a_tracking_outage_during_the_rounds_warns_once_and_stage1_goes_on() -> None:
    from fedcare.tracking.stage1_run import LiveRounds

    said: list[str] = []
    live = LiveRounds(lambda: "no-such-run", warn=said.append)
    for line in _document()["rounds"]:
        live(line)
    assert live.logged == 0 and len(said) == 1 and "live rounds stopped at round 1" in said[0]


def test_a_stage1_run_says_what_it_is_beside_simulated_runs(tmp_path: Path) -> None:
    """No test metric (the sites score at home), so it says why, and fills the columns it can."""
    from mlflow.tracking import MlflowClient

    from fedcare.tracking import store, views
    from fedcare.tracking.stage1_run import log_stage1_run

    uri = store.configure(store.default_tracking_uri(tmp_path))
    (tmp_path / "result").mkdir()
    run = MlflowClient(tracking_uri=uri).get_run(log_stage1_run(_document(), tmp_path / "result"))
    tags, params, metrics = run.data.tags, run.data.params, run.data.metrics
    assert tags["fedcare.kind"] == "stage1-federation"
    assert tags["fedcare.setting"] == "fedcare-K2-T2-stage1-over-sites"
    note = tags["mlflow.note.content"]  # the run's description in the UI
    assert note.startswith("**Stage 1 of fedcare over 2 real sites** (a, b): 2 of 2 rounds run")
    assert "final λ*: readmission 0.900, los 0.100" in note and "No test metrics here" in note
    assert metrics["stage1.rounds_run"] == 2 and metrics["stage1.sites"] == 2
    assert metrics["stage1.converged"] == 0 and metrics["lambda/readmission"] == 0.9
    # The saved view's first columns (setting, K, T) are filled; only the test columns are not.
    shown = {"tags.`fedcare.setting`": tags, "params.`data.clients`": params,
             "params.`stage1.rounds`": params}  # fmt: skip
    columns = views.runs_columns({"readmission": {"metric": "auroc"}})
    for column in columns[:3]:
        key = column.split("`")[1]
        assert shown[column].get(key), column
    assert not any(c.split("`")[1] in metrics for c in columns[3:])
