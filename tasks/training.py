"""Training tasks: Stage 1 on a chosen backend, Stage 2 of one client, evaluation.

Each is a call to a public function of :mod:`fedcare_core.runner` (the same phases
``run_experiment`` runs), so the flow's results equal ``fedcare run``'s for the same
configuration and seed. No retries: a failed computation is a bug or bad data, not a glitch.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from prefect import task

from fedcare_core.config import ExperimentConfig
from fedcare_core.data.cohort import Cohort
from fedcare_core.data.federation import ClientData, Federation
from fedcare_core.data.partition import FeaturePartition
from fedcare_core.evaluate import EvaluationReport
from fedcare_core.runner import (
    ExperimentResult,
    Stage1Runner,
    configure_torch,
    evaluate_experiment,
    run_experiment,
    run_stage2_client,
)
from fedcare_core.stage1 import Stage1Result, run_stage1
from fedcare_core.stage2 import Stage2Result
from tasks.common import NO_CACHE, run_logger

#: Stage 1 backends (``fedcare_flower.BACKENDS``; repeated so that importing this module does
#: not import Flower).
BACKENDS = ("local", "flower-sim", "flower-deployment")
#: Log Stage 1 progress every this many rounds.
PROGRESS_EVERY = 10


def _progress_logger() -> Any:
    logger = run_logger()

    def progress(stage: str, done: int, total: int) -> None:
        if done == total or done % PROGRESS_EVERY == 0:
            logger.info("%s: %d/%d", stage, done, total)

    return progress


def _flower_runner(backend: str, flower_options: Mapping[str, Any] | None) -> Stage1Runner | None:
    """The Flower runner of ``backend`` (None for ``"local"``); Flower is imported only here."""
    from fedcare_core.errors import ConfigError

    if backend not in BACKENDS:
        raise ConfigError(f"unknown backend {backend!r}; expected one of {', '.join(BACKENDS)}")
    if backend == "local":
        return None
    from fedcare_flower.flower_options import FlowerConfig
    from fedcare_flower.runners import make_stage1_runner

    try:
        flower = FlowerConfig(**dict(flower_options or {})).validate()
    except TypeError as exc:
        raise ConfigError(f"unknown Flower option: {exc}") from None
    return make_stage1_runner(backend, flower)


@task(name="stage1", cache_policy=NO_CACHE, persist_result=False)
def stage1_task(
    federation: Federation,
    config: ExperimentConfig,
    backend: str = "local",
    flower_options: Mapping[str, Any] | None = None,
) -> Stage1Result:
    """Federated multi-objective training of the shared backbone (Algorithm 1).

    Parameters
    ----------
    federation
        The clients.
    config
        The experiment configuration.
    backend
        ``"local"`` (in process), ``"flower-sim"`` or ``"flower-deployment"``.
    flower_options
        :class:`fedcare_flower.flower_options.FlowerConfig` fields for the Flower backends
        (e.g. ``round_timeout_s``).

    Returns
    -------
    Stage1Result
        ``w*`` and the per-round λ*, ‖d‖², losses and participants.

    Raises
    ------
    ConfigError
        For an unknown backend or Flower option.
    """
    from fedcare_core.errors import ConfigError

    if backend not in BACKENDS:
        raise ConfigError(f"unknown backend {backend!r}; expected one of {', '.join(BACKENDS)}")
    configure_torch(config)
    progress = _progress_logger()
    if backend == "local":
        return run_stage1(federation, config.model, config.stage1, config.seed, progress=progress)
    runner = _flower_runner(backend, flower_options)
    assert runner is not None  # only "local" has no runner
    result = runner(federation, config.model, config.stage1, config.seed, progress)
    for note in result.notes:
        run_logger().warning("stage 1: %s", note)
    return result


@task(name="stage2-client", cache_policy=NO_CACHE, persist_result=False)
def stage2_client_task(
    backbone: Mapping[str, torch.Tensor],
    client: ClientData,
    kinds: Mapping[str, str],
    config: ExperimentConfig,
) -> Stage2Result:
    """Fine-tune one client's personalised model (Algorithm 2), in whatever process runs it.

    Parameters
    ----------
    backbone
        ``fedcare_core.runner.stage2_backbone``.
    client
        The client's data (only this client's: a worker process receives nothing else).
    kinds
        Objective kinds.
    config
        The experiment configuration.

    Returns
    -------
    Stage2Result
        The personalised model and its μ* and loss traces.
    """
    configure_torch(config)  # a fresh worker process starts with torch's defaults
    result = run_stage2_client(backbone, client, kinds, config)
    run_logger().info(
        "client %d: %d steps, best epoch %d, stopped on %s",
        result.client_id,
        result.steps,
        result.best_epoch,
        result.stopped,
    )
    return result


@task(name="baseline", cache_policy=NO_CACHE, persist_result=False)
def baseline_task(
    cohort: Cohort,
    partition: FeaturePartition,
    config: ExperimentConfig,
    source: str | None,
    backend: str = "local",
    flower_options: Mapping[str, Any] | None = None,
) -> ExperimentResult:
    """Run a baseline or bound (FedAvg, FedProx, FMGDA, FSMGDA, PAFNet, local, centralised).

    Baselines have no Stage 2 to fan out: ``run_experiment`` dispatches them to their own
    runner in the core. FedAvg, FedProx, FMGDA and FSMGDA run their rounds on ``backend``
    (``fedcare run --backend``); PAFNet and the bounds run in process only and refuse a Flower
    backend with the reason.

    Parameters
    ----------
    cohort, partition, source
        From the load task.
    config
        The configuration; ``config.algorithm`` is a baseline.
    backend
        ``"local"``, ``"flower-sim"`` or ``"flower-deployment"``.
    flower_options
        :class:`fedcare_flower.flower_options.FlowerConfig` fields for the Flower backends.

    Returns
    -------
    ExperimentResult
        As ``fedcare run --algorithm <baseline> --backend <backend>`` returns it.
    """
    configure_torch(config)
    runner = _flower_runner(backend, flower_options)
    return run_experiment(
        cohort,
        partition,
        config,
        source=source,
        progress=_progress_logger(),
        stage1_runner=runner,
    )


@task(name="warm-up-worker", cache_policy=NO_CACHE, persist_result=False)
def warm_up_task(index: int) -> int:
    """Import torch and the Stage 2 code in a fresh worker process; return its process id.

    Submitted once per worker when the flow starts, so the workers' start-up (a new Python,
    importing Prefect and torch: seconds each) overlaps Stage 1 instead of delaying Stage 2.

    Parameters
    ----------
    index
        Which worker (for the task-run name only).

    Returns
    -------
    int
        The worker's process id.
    """
    import fedcare_core.stage2  # noqa: F401

    return os.getpid()


@task(name="evaluate", cache_policy=NO_CACHE, persist_result=False)
def evaluate_task(
    federation: Federation,
    config: ExperimentConfig,
    stage1: Stage1Result,
    stage2: Sequence[Stage2Result],
) -> EvaluationReport:
    """Score every client on its test split with the model it deploys.

    Parameters
    ----------
    federation, config, stage1
        As for the other tasks.
    stage2
        The Stage 2 results (empty for FedCARE-B).

    Returns
    -------
    EvaluationReport
        Pooled and per-client metrics per objective.
    """
    configure_torch(config)
    return evaluate_experiment(federation, config, stage1, list(stage2))
