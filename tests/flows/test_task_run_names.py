"""Per-client task runs are named after their phase and client (``stage2-client0``, …)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from prefect import flow
from prefect.task_runners import ThreadPoolTaskRunner

from fedcare_core.config import DataConfig, ExperimentConfig, Stage1Config, Stage2Config
from fedcare_core.run.pipeline import prepare_federation, run_algorithm
from fedcare_core.run.results import DataProvenance
from tasks.training import PrefectExecutor, client_run_name, worker_pool
from tests.fedcare_core.synthetic import PARTITION, make_cohort

K = 3


def _config(algorithm: str) -> ExperimentConfig:
    return ExperimentConfig(
        algorithm=algorithm,
        seed=1,
        data=DataConfig(clients=K),
        stage1=Stage1Config(rounds=2, batch_size=32),
        stage2=Stage2Config(epochs=1, batch_size=32),
    )


def _task_run_names(flow_run_id: Any, prefix: str, expected: int) -> list[str]:
    """Names of the flow run's finished task runs starting with ``prefix`` (polled)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    deadline = time.monotonic() + 60
    with get_client(sync_client=True) as client:
        while True:
            names = sorted(
                r.name
                for r in client.read_task_runs(
                    flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id]))
                )
                if r.name.startswith(prefix) and r.end_time is not None
            )
            if len(names) >= expected or time.monotonic() > deadline:
                return names
            time.sleep(0.5)


@pytest.mark.parametrize(
    ("algorithm", "phase"), [("fedcare", "stage2"), ("local", "local"), ("fedxgb", "own-trees")]
)
@pytest.mark.parametrize("parallel", [False, True])
def test_per_client_task_runs_carry_phase_and_client_id(
    prefect_harness: None, algorithm: str, phase: str, parallel: bool
) -> None:
    cohort, config = make_cohort(300), _config(algorithm)
    federation = prepare_federation(cohort, PARTITION, config, None)

    @flow(task_runner=ThreadPoolTaskRunner(max_workers=2), validate_parameters=False)  # type: ignore[arg-type]
    def run(pool: Any) -> None:
        run_algorithm(
            federation,
            config,
            provenance=DataProvenance.of(cohort),
            executor=PrefectExecutor(pool),
        )

    if parallel:
        with worker_pool(2) as pool:
            state = run(pool, return_state=True)
    else:
        state = run(None, return_state=True)
    assert state.is_completed(), state.message
    names = _task_run_names(state.state_details.flow_run_id, f"{phase}-client", K)
    assert names == [f"{phase}-client{k}" for k in range(K)]


def test_the_name_falls_back_to_the_phase_for_an_item_without_client_id() -> None:
    assert client_run_name("stage2")({"item": object()}) == "stage2-client"
