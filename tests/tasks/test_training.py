"""The Prefect executor runs the pipeline's phases as tasks and gives run_experiment's result."""

from __future__ import annotations

import pytest
from prefect import flow
from prefect.task_runners import ThreadPoolTaskRunner

from fedcare.app.run import backend_runner
from fedcare_core.config import DataConfig, ExperimentConfig, Stage1Config, Stage2Config
from fedcare_core.errors import ConfigError
from fedcare_core.run.pipeline import prepare_federation, run_algorithm, run_experiment
from fedcare_core.run.results import DataProvenance
from tasks.training import PrefectExecutor, warm_up_task, worker_pool
from tests.fedcare_core.synthetic import PARTITION, make_cohort


def _config(algorithm: str = "fedcare") -> ExperimentConfig:
    return ExperimentConfig(
        algorithm=algorithm,
        seed=2,
        data=DataConfig(clients=3),
        stage1=Stage1Config(rounds=2, batch_size=32),
        stage2=Stage2Config(epochs=2, batch_size=32),
    )


@pytest.mark.parametrize("algorithm", ["fedcare", "local", "fedavg"])
@pytest.mark.parametrize("parallel", [False, True])
def test_phases_as_tasks_reproduce_run_experiment(algorithm: str, parallel: bool) -> None:
    cohort, config = make_cohort(300), _config(algorithm)
    expected = run_experiment(cohort, PARTITION, config).to_dict()
    federation = prepare_federation(cohort, PARTITION, config, None)

    # As the flow: tasks on two threads, each computing in one of two worker processes.
    @flow(task_runner=ThreadPoolTaskRunner(max_workers=2))  # type: ignore[arg-type]
    def run(pool: object) -> dict:
        return run_algorithm(
            federation,
            config,
            provenance=DataProvenance.of(cohort),
            executor=PrefectExecutor(pool),  # type: ignore[arg-type]
        ).to_dict()

    if parallel:
        with worker_pool(2) as pool:
            got = _in_flow(run, pool)
    else:
        got = _in_flow(run, None)
    for doc in (expected, got):
        doc.pop("timing")
    assert got == expected


def test_unknown_backend_and_flower_option_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="unknown backend"):
        backend_runner("ray", {})
    with pytest.raises(ConfigError, match="unknown Flower option"):
        backend_runner("flower-sim", {"no_such_option": 1})
    assert backend_runner("local", {}) is None


def _in_flow(flow_fn, pool):
    return flow_fn.with_options(validate_parameters=False)(pool)


def test_warm_up_starts_a_worker_and_returns_its_process_id() -> None:
    import os

    with worker_pool(1) as pool:
        pid = warm_up_task.fn(pool, 0)
        assert pid != os.getpid()
        assert pool.submit(os.getpid).result() == pid


def test_a_baseline_result_logs_without_models(tmp_path) -> None:
    from fedcare.tracking import store
    from tasks.tracking import log_experiment_task, start_parent_run_task

    result = run_experiment(make_cohort(300), PARTITION, _config("fedavg"))
    uri, parent = start_parent_run_task.fn(
        store.default_tracking_uri(tmp_path), "synthetic", run_name="f", tags={}, params={}
    )
    run_id = log_experiment_task.fn(
        uri, result, parent_run_id=parent, flow_run_id=None, extra_artifacts={},
        backend="local", models=False,
    )  # fmt: skip
    run = store.client().get_run(run_id)
    assert run.info.status == "FINISHED" and run.data.tags["fedcare.algorithm"] == "fedavg"
