"""The run pipeline: one entry from a prepared federation to a result document.

:func:`run_algorithm` runs any registered algorithm (:mod:`fedcare_core.algorithms`) over a
prepared federation — the same object the partition checks validated — through the same
phases: view → rounds → per-client phase → deployment and evaluation → the document. Where the
work runs is a parameter, never a separate orchestration:

- ``backend`` runs the federated rounds elsewhere (Flower's simulation or deployment; None: in
  process);
- ``executor`` runs the phases (:mod:`fedcare_core.run.executors`: in process, worker processes,
  or the Prefect flow's tasks).

The CLI, the experiment engine, the Prefect flow and the Flower path all call it;
:func:`run_experiment` is the shortcut from a loaded cohort.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from fedcare_core.algorithms import check_backend, get_algorithm
from fedcare_core.algorithms.base import Algorithm, Rounds, RunInputs, Stage1Runner
from fedcare_core.config import ExperimentConfig
from fedcare_core.data.client_preferences import with_preferences
from fedcare_core.data.clients import ClientData, Federation, build_federation
from fedcare_core.data.cohort import Cohort, Objective
from fedcare_core.data.partition import FeaturePartition, with_disparity
from fedcare_core.errors import ConfigError
from fedcare_core.evaluation.clients import EvaluationReport, evaluate_with_validation
from fedcare_core.evaluation.interval_report import with_interval_metrics
from fedcare_core.evaluation.pooled import EvaluationSettings
from fedcare_core.nn.cpu_kernels import ENV, kernel_path, kernel_path_mismatch
from fedcare_core.nn.training import ProgressFn
from fedcare_core.predict.calibrate import calibrate_predictors
from fedcare_core.predict.predictors import (
    ClientPredictor,
    predictor_interval_scorer,
    predictor_scorer,
)
from fedcare_core.run.executors import Executor, InProcess
from fedcare_core.run.interrupts import checked_progress
from fedcare_core.run.results import DataProvenance, ExperimentResult, PhaseTimer, assemble_result
from fedcare_core.stage1.loop import Stage1Result


def configure_torch(config: ExperimentConfig) -> None:
    """Set this process's torch state for a reproducible run.

    Deterministic algorithms and ``config.threads`` intra-op threads. Every process that runs
    part of an experiment (e.g. a worker fine-tuning one client) calls it, so a client's result
    does not depend on where it ran. Warns (``RuntimeWarning``) when torch does not run the CPU
    kernels :mod:`fedcare_core.nn.cpu_kernels` pinned, since results then differ from other
    machines' in their last bits.

    Parameters
    ----------
    config
        The experiment configuration.
    """
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(config.threads)
    mismatch = kernel_path_mismatch(os.environ.get(ENV), kernel_path())
    if mismatch is not None:
        warnings.warn(mismatch, RuntimeWarning, stacklevel=2)


def prepare_federation(
    cohort: Cohort, partition: FeaturePartition, config: ExperimentConfig, source: str | None
) -> Federation:
    """Apply ρ to the partition and build the clients.

    Parameters
    ----------
    cohort
        The loaded dataset.
    partition
        The dataset's default feature partition (``config.data.rho`` is applied here).
    config
        The experiment configuration (splits, K, seed, vocabulary size).
    source
        The data file's name, for error messages.

    Returns
    -------
    Federation
        The clients, each with its own encoded features and splits, and the ``preferences``
        of the objectives it pursues.
    """
    if config.data.rho is not None:
        partition = with_disparity(partition, config.data.rho, config.seed)
    federation = build_federation(
        cohort,
        partition,
        config.data,
        config.seed,
        max_categories=config.model.max_categories,
        source=source,
    )
    return with_preferences(federation, config.objective_preferences(), cohort)


def personalise_one(client: ClientData, name: str, shared: Any, config: ExperimentConfig) -> Any:
    """One client's task of an algorithm's per-client phase, in whatever process runs it.

    A module-level function, so executors can send it to worker processes; each sets its own
    torch state first, so the result does not depend on where it ran.
    """
    configure_torch(config)
    return get_algorithm(name).personalise_client(shared, client, config)


def _checked_algorithm(
    config: ExperimentConfig, backend: object | None, objectives: Sequence[Objective]
) -> Algorithm:
    """The configuration's algorithm, once the configuration, backend and objectives are checked.

    Raises
    ------
    ConfigError
        For an invalid configuration, an unknown algorithm, a backend that cannot run it, or
        an objective of a kind it cannot train.
    """
    algorithm = get_algorithm(config.algorithm)
    config.validate()
    check_backend(algorithm, backend)
    for objective in objectives:
        refusal = algorithm.refuses_objective(objective.name, objective.kind)
        if refusal is not None:
            raise ConfigError(refusal)
    return algorithm


def run_algorithm(
    federation: Federation,
    config: ExperimentConfig,
    *,
    provenance: DataProvenance,
    backend: Stage1Runner | None = None,
    executor: Executor | None = None,
    progress: ProgressFn | None = None,
    stage1: Stage1Result | None = None,
    timing: Mapping[str, float] | None = None,
    backend_name: str = "local",
) -> ExperimentResult:
    """Run ``config.algorithm`` over a prepared federation and return its result document.

    Parameters
    ----------
    federation
        The prepared clients (:func:`prepare_federation`; the flow checks them first).
    config
        The configuration; it is validated, the algorithm looked up in the registry.
    provenance
        The data's checksum and loading notes (for the document).
    backend
        Runs the federated rounds (Flower); None: in process.
    executor
        Runs the phases (default :class:`~fedcare_core.run.executors.InProcess`).
    progress
        Called as ``progress(phase, done, total)``: ``"stage1"`` per round, ``"stage2"`` or
        ``"local"`` per client, ``"centralised"`` once.
    stage1
        The rounds' result when already run (FedCARE and FedCARE-B of one setting share
        Stage 1); the rounds phase is then skipped.
    timing
        Seconds already spent (``partition_s`` building the federation; ``stage1_s`` with a
        shared ``stage1``).
    backend_name
        The backend's name, recorded in the result (``stage1.backend`` of the document).

    Returns
    -------
    ExperimentResult
        Metrics, round trace, per-client traces and timings.

    Raises
    ------
    ConfigError
        For an invalid configuration, an unknown algorithm, a backend that cannot run it, or
        an objective of a kind it cannot train.
    """
    algorithm = _checked_algorithm(config, backend, federation.objectives)
    configure_torch(config)
    executor = executor or InProcess()
    progress = checked_progress(progress)  # a signal whose exception was lost ends the run
    timer = PhaseTimer(timing)
    with timer.phase("partition"):
        view, layout = algorithm.view(federation)
    inputs = RunInputs(federation, view, layout, config)
    with timer.phase("stage1"):
        rounds = (
            Rounds(stage1)
            if stage1 is not None
            else executor.run("stage1", algorithm.rounds, inputs, backend, progress)
        )
    personal: list[Any] = []
    if algorithm.personal_phase is not None:
        with timer.phase("stage2"):
            work = algorithm.personalisation(inputs, rounds)
            personal = executor.map(
                algorithm.personal_phase,
                personalise_one,
                work.clients,
                algorithm.name,
                work.shared,
                config,
                progress=progress,
            )
    with timer.phase("evaluate"):
        predictors = calibrate_predictors(
            federation,
            algorithm.predictors(inputs, rounds, personal),
            calibration_setting(config),
            config.interval_coverage,
            shared=algorithm.deploys == "global",
        )
        scorers = [predictor_scorer(p) for p in predictors]
        settings = evaluation_settings(config)
        report = executor.run("evaluate", evaluate_with_validation, federation, scorers, settings)
        report = interval_evaluation(report, federation, predictors)
    return assemble_result(
        config,
        federation,
        algorithm.stage1_record(inputs, rounds, personal),
        algorithm.stage2_record(personal),
        report,
        predictors,
        timing=timer.timing(),
        provenance=provenance,
        backend=backend_name,
    )


def calibration_setting(config: ExperimentConfig) -> str:
    """The calibration a run applies: its setting, except that DP keeps ``auto`` at each client.

    ``auto`` sends each client's validation summaries across the federation, which DP's ε does
    not cover; under client-level DP each client calibrates alone (``local``) so that ε speaks
    for everything the run releases (docs/PRIVACY.md).
    """
    if config.calibration == "auto" and config.stage1.privacy() is not None:
        return "local"
    return config.calibration


def evaluation_settings(config: ExperimentConfig) -> EvaluationSettings:
    """The evaluation's settings of a run: target sensitivity, bootstrap, seed, calibration."""
    return EvaluationSettings(
        config.target_sensitivity,
        config.bootstrap,
        config.seed,
        calibrated=config.calibration != "none",
    )


def interval_evaluation(
    report: EvaluationReport, federation: Federation, predictors: list[ClientPredictor]
) -> EvaluationReport:
    """``report`` with the length-of-stay intervals' test coverage and width (issue 31).

    The deployed models' intervals (fitted on each client's validation rows) scored on its test
    rows: :func:`~fedcare_core.evaluation.interval_report.with_interval_metrics`, with their
    nominal coverage as ``interval_level``.
    """
    levels = {i.coverage for p in predictors for i in p.intervals.values()}
    scorers = [predictor_interval_scorer(p) for p in predictors]
    level = levels.pop() if len(levels) == 1 else None
    return with_interval_metrics(report, federation, scorers, level=level)


def run_experiment(
    cohort: Cohort,
    partition: FeaturePartition,
    config: ExperimentConfig,
    *,
    source: str | None = None,
    progress: ProgressFn | None = None,
    stage1_runner: Stage1Runner | None = None,
    executor: Executor | None = None,
) -> ExperimentResult:
    """Prepare the federation from a loaded cohort and :func:`run_algorithm` on it.

    Parameters
    ----------
    cohort
        The loaded dataset.
    partition
        The dataset's default feature partition (ρ from ``config`` is applied here).
    config
        The experiment configuration.
    source
        The data file's name, for error messages.
    progress
        As for :func:`run_algorithm`.
    stage1_runner
        The federated backend (:func:`run_algorithm`'s ``backend``).
    executor
        As for :func:`run_algorithm`.

    Returns
    -------
    ExperimentResult
        As :func:`run_algorithm` returns.
    """
    _checked_algorithm(config, stage1_runner, cohort.objectives)  # before the federation
    t0 = time.perf_counter()
    federation = prepare_federation(cohort, partition, config, source)
    return run_algorithm(
        federation,
        config,
        provenance=DataProvenance.of(cohort),
        backend=stage1_runner,
        executor=executor,
        progress=progress,
        timing={"partition_s": time.perf_counter() - t0},
    )
