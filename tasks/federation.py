"""Backend ``"federation"``'s tasks: Stage 1 over a coordinator's sites, and its MLflow run.

The Stage 1 task runs what ``fedcare federation run`` runs
(:func:`fedcare.app.federation.federated_stage1`, the federation service: the rounds, then
the Stage 1 document): no patient data passes through it, only
the schema, the sites' names and the model updates the SuperLink relays. It is never retried (a
second attempt would be a second Stage 1) and its result is not persisted. An expected failure
(sites offline when the time is up, the run failing) ends the task run ``Failed`` with the
one-line message and the error as its data, instead of a traceback in the log.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefect import task
from prefect.states import Failed, State

import fedcare.tracking  # noqa: F401  (MLflow telemetry off before mlflow is imported)
from fedcare_core.errors import FedcareError
from fedcare_core.sites.schema import read_schema
from tasks.common import IO_RETRIES, IO_RETRY_DELAY_S, NO_CACHE, retry_on_io_error, run_logger
from tasks.training import progress_logger

if TYPE_CHECKING:
    from fedcare.tracking.stage1_run import LiveRounds

#: ``fedcare.entry`` tag of the Stage 1 runs the flow logs.
_FLOW_ENTRY = "fedcare flow (backend federation)"


@dataclass(frozen=True)
class LiveTarget:
    """Where a seed's rounds go as they end: the store and the flow's parent run."""

    tracking_uri: str
    parent_run_id: str
    tags: Mapping[str, str]

    def open(self, head: Mapping[str, Any]) -> LiveRounds:
        """The seed's round logger (its Stage 1 run opened, RUNNING, at the first round)."""
        from fedcare.tracking import store
        from fedcare.tracking.stage1_run import LiveRounds, open_stage1_run

        store.configure(self.tracking_uri)
        tags = {"fedcare.entry": _FLOW_ENTRY, **self.tags}
        return LiveRounds(
            lambda: open_stage1_run(head, parent_run_id=self.parent_run_id, tags=tags),
            run_logger().warning,
        )


@dataclass(frozen=True)
class FederationStage1:
    """One seed's Stage 1 over the sites: its document and the ServerApp's result folder."""

    document: dict[str, Any]
    result_dir: Path
    #: The MLflow run the rounds were logged to as they ended (None: not tracked live).
    live_run_id: str | None = None
    #: How many rounds that run received live.
    live_rounds: int = 0


@task(
    name="stage1-federation",
    task_run_name="stage1-federation-seed{seed}",
    cache_policy=NO_CACHE,
    persist_result=False,
)
def stage1_federation_task(
    state_dir: str,
    schema_path: str,
    *,
    min_sites: int,
    rounds: int,
    seed: int,
    run_name: str,
    secagg: bool = False,
    live: LiveTarget | None = None,
) -> FederationStage1 | State:
    """Stage 1 over the sites registered with the coordinator of ``state_dir``.

    Parameters
    ----------
    state_dir
        The coordinator's state folder (its SuperLink running).
    schema_path
        The federation schema the sites were prepared for.
    min_sites
        How many registered sites must be online.
    rounds
        T, the Stage 1 rounds.
    seed
        The run's seed.
    run_name
        The run's name (its folder under ``STATE/runs/``, the MLflow run's name).
    secagg
        Sum each round with Flower's SecAgg+ (the coordinator sees only per-objective sums).
    live
        Log each round to MLflow as it ends, in a run nested under the flow's parent run
        (:func:`log_stage1_task` finishes it). None: logged at the end only.

    Returns
    -------
    FederationStage1 or State
        The Stage 1 document and result folder; on an expected error a ``Failed`` state whose
        data is the error.
    """
    from fedcare.app.federation import federated_stage1
    from fedcare.flower.flower_options import FlowerConfig
    from fedcare.sites.coordinator import Coordinator

    logger = run_logger()
    schema = read_schema(schema_path)
    logger.info("seed %d: waiting for %d site(s) of %s", seed, min_sites, state_dir)
    try:
        run = federated_stage1(
            Coordinator(state_dir), schema, min_sites=min_sites, rounds=rounds, seed=seed,
            flower=FlowerConfig(), run_name=run_name, progress=progress_logger(), secagg=secagg,
            open_live=None if live is None else live.open,
        )  # fmt: skip
    except FedcareError as exc:
        logger.error("%s: %s", type(exc).__name__, exc)
        return Failed(message=f"{type(exc).__name__}: {exc}", data=exc)
    document, rounds_live = run.document, run.live
    for note in document["notes"]:
        logger.warning("stage 1: %s", note)
    sites = ", ".join(s["name"] for s in document["sites"])
    logger.info("seed %d: %d round(s) over %s", seed, document["rounds_run"], sites)
    if rounds_live is None:
        return FederationStage1(document, run.result_dir)
    return FederationStage1(document, run.result_dir, rounds_live.run_id, rounds_live.logged)


@task(
    name="mlflow-log-stage1",
    task_run_name="mlflow-log-stage1-seed{seed}",
    retries=IO_RETRIES,
    retry_delay_seconds=IO_RETRY_DELAY_S,
    retry_condition_fn=retry_on_io_error,
    cache_policy=NO_CACHE,
    persist_result=False,
)
def log_stage1_task(
    tracking_uri: str,
    stage1: FederationStage1,
    *,
    seed: int,
    parent_run_id: str,
    tags: Mapping[str, str],
) -> str:
    """Log one seed's Stage 1 document and ``w*`` as a run nested under the flow's parent run.

    Parameters
    ----------
    tracking_uri
        The MLflow store.
    stage1
        The Stage 1 task's result.
    seed
        The run's seed (names the task run).
    parent_run_id
        The flow run's parent run.
    tags
        Further tags (the Prefect flow run).

    Returns
    -------
    str
        The new run's id.
    """
    from fedcare.tracking import store
    from fedcare.tracking.stage1_run import LiveRounds, log_stage1_run

    store.configure(tracking_uri)
    live = None
    if stage1.live_run_id is not None:  # the rounds went live: finish that run
        live = LiveRounds.resumed(stage1.live_run_id, stage1.live_rounds, run_logger().warning)
    run_id = log_stage1_run(
        stage1.document,
        stage1.result_dir,
        parent_run_id=parent_run_id,
        tags={"fedcare.entry": _FLOW_ENTRY, **tags},
        live=live,
    )
    run_logger().info("seed %d: MLflow run %s", seed, run_id)
    return run_id
