"""Training tasks through ``.fn`` equal the runner's phases."""

from __future__ import annotations

import pytest

from fedcare_core.config import DataConfig, ExperimentConfig, Stage1Config, Stage2Config
from fedcare_core.errors import ConfigError
from fedcare_core.runner import (
    assemble_result,
    objective_kinds,
    prepare_federation,
    run_experiment,
    stage2_backbone,
)
from tasks.training import (
    baseline_task,
    evaluate_task,
    stage1_task,
    stage2_client_task,
    warm_up_task,
)
from tests.fedcare_core.synthetic import PARTITION, make_cohort


def _config() -> ExperimentConfig:
    return ExperimentConfig(
        seed=2,
        data=DataConfig(clients=3),
        stage1=Stage1Config(rounds=2, batch_size=32),
        stage2=Stage2Config(epochs=2, batch_size=32),
    )


def test_tasks_reproduce_run_experiment() -> None:
    cohort, config = make_cohort(300), _config()
    expected = run_experiment(cohort, PARTITION, config).to_dict()
    federation = prepare_federation(cohort, PARTITION, config, None)
    stage1 = stage1_task.fn(federation, config, "local")
    backbone = stage2_backbone(stage1, federation, config)
    kinds = objective_kinds(federation)
    stage2 = [stage2_client_task.fn(backbone, c, kinds, config) for c in federation.clients]
    report = evaluate_task.fn(federation, config, stage1, stage2)
    got = assemble_result(
        config, federation, stage1, stage2, report, timing={}, data_sha256=cohort.source_sha256
    ).to_dict()
    for doc in (expected, got):
        doc.pop("timing")
        doc["data"].pop("notes")
    assert got == expected


def test_unknown_backend_and_flower_option_are_config_errors() -> None:
    cohort, config = make_cohort(300), _config()
    federation = prepare_federation(cohort, PARTITION, config, None)
    with pytest.raises(ConfigError, match="unknown backend"):
        stage1_task.fn(federation, config, "ray")
    with pytest.raises(ConfigError, match="unknown Flower option"):
        stage1_task.fn(federation, config, "flower-sim", {"no_such_option": 1})


def test_baseline_task_is_run_experiment_and_logs_without_models(tmp_path) -> None:
    from fedcare_tracking import store
    from tasks.tracking import log_experiment_task, start_parent_run_task

    cohort = make_cohort(300)
    config = _config().with_overrides(algorithm="fedavg")
    expected = run_experiment(cohort, PARTITION, config).to_dict()
    result = baseline_task.fn(cohort, PARTITION, config, None)
    got = result.to_dict()
    for doc in (expected, got):
        doc.pop("timing")
    assert got == expected and got["algorithm"] == "fedavg"
    uri, parent = start_parent_run_task.fn(
        store.default_tracking_uri(tmp_path), "synthetic", run_name="f", tags={}, params={}
    )
    run_id = log_experiment_task.fn(
        uri, result, parent_run_id=parent, flow_run_id=None, extra_artifacts={},
        backend="local", models=False,
    )  # fmt: skip
    run = store.client().get_run(run_id)
    assert run.info.status == "FINISHED" and run.data.tags["fedcare.algorithm"] == "fedavg"


def test_warm_up_returns_its_process_id() -> None:
    import os

    assert warm_up_task.fn(0) == os.getpid()
