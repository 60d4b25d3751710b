"""Tracking tasks through ``.fn`` on a throw-away SQLite store."""

from __future__ import annotations

from pathlib import Path

import pytest

import fedcare.tracking  # noqa: F401  (MLflow environment defaults before mlflow loads)
from fedcare.tracking.track import backbone_model_name
from fedcare_core.config import DataConfig, ExperimentConfig, Stage1Config, Stage2Config
from fedcare_core.run.pipeline import run_experiment
from tasks.tracking import (
    TAG_FAILED_AT,
    finish_run_task,
    log_artifacts_task,
    log_experiment_task,
    register_task,
    set_tags_task,
    start_parent_run_task,
)
from tests.fedcare_core.synthetic import PARTITION, make_cohort


def test_parent_run_nested_run_registry_and_finish(tmp_path: Path) -> None:
    from fedcare.tracking import registry, store

    config = ExperimentConfig(
        data=DataConfig(clients=3),
        stage1=Stage1Config(rounds=2, batch_size=32),
        stage2=Stage2Config(epochs=2, batch_size=32),
    )
    result = run_experiment(make_cohort(300), PARTITION, config)
    report = tmp_path / "report"
    report.mkdir()
    (report / "index.html").write_text("<html>passed</html>\n")

    uri, parent = start_parent_run_task.fn(
        store.default_tracking_uri(tmp_path),
        "synthetic",
        run_name="flow-run",
        tags={"prefect.flow_run_id": "fr-1"},
        params={"flow.clients": "3"},
    )
    log_artifacts_task.fn(uri, parent, report, "validation/raw")
    run_id = log_experiment_task.fn(
        uri,
        result,
        parent_run_id=parent,
        flow_run_id="fr-1",
        extra_artifacts={"validation/raw": report},
        backend="local",
    )
    registered = register_task.fn(uri, result, run_id)
    first = registered.backbone
    assert first is not None
    fed = result.federation
    assert first.model_name == backbone_model_name("synthetic", "fedcare", fed.objective_names)
    assert first.model_name == "fedcare-synthetic-fedcare-early_discharge+los+readmission-backbone"
    assert first.promoted
    backbone = store.client().get_registered_model(first.model_name)
    assert backbone.tags["fedcare.model"] == "backbone"
    assert backbone.tags["fedcare.objectives"] == "early_discharge,los,readmission"
    assert backbone.tags["fedcare.outputs"] == ",".join(
        f"{o.name}_probability" if o.kind == "binary" else f"{o.name}_days" for o in fed.objectives
    )
    assert backbone.tags["fedcare.input"] == "encoded common features"
    assert "not raw rows" in backbone.description
    assert [c.client for c in registered.clients] == [0, 1, 2]
    assert [(c.version, c.promoted) for c in registered.clients] == [(1, True)] * 3
    objectives = "+".join(sorted(fed.clients[1].objectives))
    assert registered.clients[1].model_name == f"fedcare-synthetic-fedcare-{objectives}-client1"
    again = register_task.fn(uri, result, run_id)  # same score: not better, alias stays
    assert again.backbone is not None
    assert again.backbone.version == first.version + 1 and not again.backbone.promoted
    assert not any(c.promoted for c in again.clients)
    set_tags_task.fn(uri, parent, {TAG_FAILED_AT: "nowhere"})
    finish_run_task.fn(uri, parent, "FINISHED")

    mc = store.client()
    assert mc.get_run(parent).info.status == "FINISHED"
    child = mc.get_run(run_id)
    assert child.data.tags["mlflow.parentRunId"] == parent
    assert child.data.tags["prefect.flow_run_id"] == "fr-1"
    assert child.data.tags["fedcare.backend"] == "local"
    names = {a.path for a in mc.list_artifacts(parent, "validation")}
    assert names == {"validation/raw"}
    champion = registry.champion(first.model_name)
    assert champion is not None and int(champion.version) == first.version
    with pytest.raises(ValueError):
        finish_run_task.fn(uri, parent, "DONE")
