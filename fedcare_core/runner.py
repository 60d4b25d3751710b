"""In-process runner: load → partition → federation → Stage 1 → Stage 2 → evaluation.

``run_experiment`` executes the whole two-stage method deterministically from a seed and
returns a plain :class:`ExperimentResult`; logging and printing happen elsewhere, from it.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from fedcare_core import __version__
from fedcare_core.config import BASELINE_ALGORITHMS, ExperimentConfig, ModelConfig, Stage1Config
from fedcare_core.cpu_kernels import ENV, kernel_path, kernel_path_mismatch
from fedcare_core.data.cohort import Cohort
from fedcare_core.data.federation import ClientData, Federation, SplitArrays, build_federation
from fedcare_core.data.partition import FeaturePartition, with_disparity
from fedcare_core.evaluate import EvaluationReport, Scorer, evaluate
from fedcare_core.models import MultiObjectiveModel, PersonalModel
from fedcare_core.stage1 import Stage1Result, load_global_model, run_stage1
from fedcare_core.stage2 import Stage2Result, fine_tune

ProgressFn = Callable[[str, int, int], None]
#: Runs Stage 1 over a federation: (federation, model config, stage 1 config, seed, progress).
#: The default is the in-process :func:`run_stage1`; the Flower layer passes its own.
Stage1Runner = Callable[
    [Federation, ModelConfig, Stage1Config, int, ProgressFn | None], Stage1Result
]


def _local_stage1(
    federation: Federation,
    model_config: ModelConfig,
    config: Stage1Config,
    seed: int,
    progress: ProgressFn | None,
) -> Stage1Result:
    return run_stage1(federation, model_config, config, seed, progress=progress)


@dataclass
class ExperimentResult:
    """Everything a run produced, as plain data."""

    config: ExperimentConfig
    federation: Federation
    stage1: Stage1Result
    stage2: list[Stage2Result]
    evaluation: EvaluationReport
    timing: dict[str, float]
    data_sha256: str
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The ``results.json`` document (no identifiers: clients are numbered 0..K-1)."""
        objectives: dict[str, Any] = {}
        for rep in self.evaluation.objectives:
            entry: dict[str, Any] = {
                "metric": rep.metric,
                "pooled": rep.pooled,
                "mean_over_clients": rep.mean_over_clients,
                "std_over_clients": rep.std_over_clients,
                "clients": [
                    {"client": c.client_id, "value": c.value, "n_test": c.n}
                    | ({"reason": c.reason} if c.reason else {})
                    for c in rep.clients
                ],
            }
            if rep.reason is not None or rep.pooled is None:
                entry["reason"] = rep.reason or "undefined"
            objectives[rep.name] = entry
        fed = self.federation
        return {
            "dataset": fed.dataset,
            "algorithm": self.config.algorithm,
            "fedcare_version": __version__,
            "cpu_kernels": kernel_path(),
            "config": self.config.to_dict(),
            "objectives": objectives,
            "rounds": [
                {
                    "round": r.round,
                    "lambda": r.lambdas,
                    "d_sq_norm": r.d_sq_norm,
                    "loss": r.losses,
                    "participants": list(r.participants),
                    "missing_objectives": list(r.missing_objectives),
                }
                for r in self.stage1.rounds
            ],
            "stage1": {
                "converged": self.stage1.converged,
                "rounds_run": len(self.stage1.rounds),
                "notes": list(self.stage1.notes),
            },
            "stage2": [
                {
                    "client": s.client_id,
                    "mu_mean": s.mu_mean,
                    "mu_trace": s.mu_trace,
                    "train_loss": s.train_loss,
                    "val_loss": s.val_loss,
                    "steps": s.steps,
                    "best_epoch": s.best_epoch,
                    "stopped": s.stopped,
                }
                for s in self.stage2
            ],
            "clients": [
                {
                    "client": c.client_id,
                    "objectives": list(c.objectives),
                    "n_train": c.train.n,
                    "n_val": c.val.n,
                    "n_test": c.test.n,
                    "common_width": c.common_encoder.width,
                    "private_features": list(c.private_features),
                    "private_width": c.private_encoder.width,
                }
                for c in fed.clients
            ],
            "data": {
                "sha256": self.data_sha256,
                "common_features": list(fed.partition.common),
                "private_pools": {k: list(v) for k, v in fed.partition.private.items()},
                "rho": fed.partition.disparity_ratio(),
                "notes": self.notes,
            },
            "timing": self.timing,
        }


def _global_scorer(model: MultiObjectiveModel) -> Scorer:
    def score(split: SplitArrays, objective: str) -> torch.Tensor:
        return model(torch.from_numpy(split.x_common), objective)

    return score


def _personal_scorer(model: PersonalModel) -> Scorer:
    def score(split: SplitArrays, objective: str) -> torch.Tensor:
        return model(torch.from_numpy(split.x_common), torch.from_numpy(split.x_private), objective)

    return score


def configure_torch(config: ExperimentConfig) -> None:
    """Set this process's torch state for a reproducible run.

    Deterministic algorithms and ``config.threads`` intra-op threads. Every process that runs
    part of an experiment (e.g. a worker fine-tuning one client) calls it, so a client's result
    does not depend on where it ran. Warns (``RuntimeWarning``) when torch does not run the CPU
    kernels :mod:`fedcare_core.cpu_kernels` pinned, since results then differ from other
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
    """Apply ρ to the partition and build the clients."""
    if config.data.rho is not None:
        partition = with_disparity(partition, config.data.rho, config.seed)
    return build_federation(
        cohort,
        partition,
        config.data,
        config.seed,
        max_categories=config.model.max_categories,
        source=source,
    )


def personalises(config: ExperimentConfig) -> bool:
    """Whether the algorithm runs Stage 2 (FedCARE does; FedCARE-B deploys the global model)."""
    return config.algorithm == "fedcare"


def objective_kinds(federation: Federation) -> dict[str, str]:
    """Objective name → ``"binary"`` or ``"regression"``, for every objective of the federation."""
    return {o.name: o.kind for o in federation.objectives}


def stage2_backbone(
    stage1: Stage1Result, federation: Federation, config: ExperimentConfig
) -> dict[str, torch.Tensor]:
    """The converged backbone w* that every client's Stage 2 starts from.

    Parameters
    ----------
    stage1
        Stage 1's result.
    federation
        The clients (for the common input width).
    config
        The experiment configuration (model widths).

    Returns
    -------
    dict of str to torch.Tensor
        The backbone's state dict.
    """
    model = load_global_model(stage1, federation.common_width, config.model)
    return model.backbone.state_dict()


def run_stage2_client(
    backbone: Mapping[str, torch.Tensor],
    client: ClientData,
    kinds: Mapping[str, str],
    config: ExperimentConfig,
) -> Stage2Result:
    """Fine-tune one client's personalised model (Algorithm 2).

    The client's random streams are keyed by the seed and its id, so clients may run in any
    order or in separate processes (each calling :func:`configure_torch` first) with the same
    result.

    Parameters
    ----------
    backbone
        :func:`stage2_backbone`.
    client
        The client's data.
    kinds
        :func:`objective_kinds`.
    config
        The experiment configuration.

    Returns
    -------
    Stage2Result
        The client's personalised model and its μ* and loss traces.
    """
    return fine_tune(backbone, client, kinds, config.model, config.stage2, config.seed)


def evaluate_experiment(
    federation: Federation,
    config: ExperimentConfig,
    stage1: Stage1Result,
    stage2: Sequence[Stage2Result],
) -> EvaluationReport:
    """Score every client on its test split with the model it deploys.

    Parameters
    ----------
    federation
        The clients.
    config
        The experiment configuration.
    stage1
        Stage 1's result (the global model, deployed when the algorithm does not personalise).
    stage2
        One result per client when :func:`personalises` (any order), else empty.

    Returns
    -------
    EvaluationReport
        Per objective: pooled, mean and std over clients, per client.

    Raises
    ------
    ValueError
        If Stage 2 results are missing, duplicated or present when they should not be.
    """
    scorers: list[Scorer]
    if personalises(config):
        by_client = {s.client_id: s for s in stage2}
        wanted = [c.client_id for c in federation.clients]
        if len(stage2) != len(wanted) or set(by_client) != set(wanted):
            raise ValueError(
                f"Stage 2 results for clients {sorted(by_client)}; expected one for each of "
                f"{wanted}"
            )
        scorers = [_personal_scorer(by_client[k].model) for k in wanted]
    else:
        if stage2:
            raise ValueError(f"algorithm {config.algorithm!r} has no Stage 2 results to score")
        global_model = load_global_model(stage1, federation.common_width, config.model)
        scorers = [_global_scorer(global_model) for _ in federation.clients]
    return evaluate(federation, scorers)


def assemble_result(
    config: ExperimentConfig,
    federation: Federation,
    stage1: Stage1Result,
    stage2: Sequence[Stage2Result],
    evaluation: EvaluationReport,
    *,
    timing: Mapping[str, float],
    data_sha256: str,
    notes: Sequence[str] = (),
) -> ExperimentResult:
    """Put a run's parts together as the :class:`ExperimentResult` ``run_experiment`` returns.

    Parameters
    ----------
    config
        The experiment configuration.
    federation
        The clients.
    stage1
        Stage 1's result.
    stage2
        Per-client Stage 2 results (any order; stored by client id).
    evaluation
        :func:`evaluate_experiment`.
    timing
        Seconds per phase (``partition_s``, ``stage1_s``, ``stage2_s``, ``evaluate_s``,
        ``total_s``).
    data_sha256
        SHA-256 of the dataset's source file.
    notes
        The cohort's loading notes.

    Returns
    -------
    ExperimentResult
        The run's result.
    """
    return ExperimentResult(
        config=config,
        federation=federation,
        stage1=stage1,
        stage2=sorted(stage2, key=lambda s: s.client_id),
        evaluation=evaluation,
        timing=dict(timing),
        data_sha256=data_sha256,
        notes=list(notes),
    )


def run_experiment(
    cohort: Cohort,
    partition: FeaturePartition,
    config: ExperimentConfig,
    *,
    source: str | None = None,
    progress: ProgressFn | None = None,
    stage1_runner: Stage1Runner | None = None,
) -> ExperimentResult:
    """Run FedCARE (or FedCARE-B) end to end in process; a baseline goes to its own runner.

    Baselines and bounds (``config.algorithm`` in ``BASELINE_ALGORITHMS``) are dispatched to
    :func:`fedcare_core.baselines.runner.run_baseline`, which returns the same result shape.

    The phases are the public functions above (:func:`prepare_federation`, the Stage 1
    runner, :func:`run_stage2_client` per client, :func:`evaluate_experiment`,
    :func:`assemble_result`); the Prefect flow calls the same ones as separate tasks.

    Parameters
    ----------
    cohort
        The loaded dataset.
    partition
        The dataset's default feature partition (ρ from ``config`` is applied here).
    config
        The experiment configuration (validated).
    source
        The data file's name, for error messages.
    progress
        Called as ``progress(stage, done, total)`` with stage ``"stage1"`` or ``"stage2"``.
    stage1_runner
        Executes Stage 1 (default: in process). Federated backends pass their own; every
        runner returns the same :class:`Stage1Result`.

    Returns
    -------
    ExperimentResult
        Metrics, λ* trace, μ* summaries and timings.
    """
    if config.algorithm in BASELINE_ALGORITHMS:
        from fedcare_core.baselines.runner import run_baseline

        return run_baseline(
            cohort,
            partition,
            config,
            source=source,
            progress=progress,
            stage1_runner=stage1_runner,
        )
    config.validate()
    configure_torch(config)
    t0 = time.perf_counter()
    federation = prepare_federation(cohort, partition, config, source)
    t1 = time.perf_counter()
    runner = stage1_runner or _local_stage1
    stage1 = runner(federation, config.model, config.stage1, config.seed, progress)
    t2 = time.perf_counter()
    return finish_experiment(
        cohort,
        config,
        federation,
        stage1,
        timing={"partition_s": t1 - t0, "stage1_s": t2 - t1},
        progress=progress,
    )


def finish_experiment(
    cohort: Cohort,
    config: ExperimentConfig,
    federation: Federation,
    stage1: Stage1Result,
    *,
    timing: Mapping[str, float],
    progress: ProgressFn | None = None,
) -> ExperimentResult:
    """Stage 2 (when the algorithm personalises), evaluation and the result, after Stage 1.

    FedCARE and FedCARE-B of one setting share Stage 1: the experiment engine runs it once
    and calls this for each.

    Parameters
    ----------
    cohort
        The loaded dataset (checksum and loading notes).
    config
        The experiment configuration.
    federation
        The clients Stage 1 ran on.
    stage1
        Stage 1's result.
    timing
        ``partition_s`` and ``stage1_s``; Stage 2's and evaluation's seconds are added.
    progress
        Called as ``progress("stage2", done, K)``.

    Returns
    -------
    ExperimentResult
        As :func:`run_experiment` returns.
    """
    t2 = time.perf_counter()
    stage2: list[Stage2Result] = []
    if personalises(config):
        backbone = stage2_backbone(stage1, federation, config)
        kinds = objective_kinds(federation)
        for i, client in enumerate(federation.clients):
            stage2.append(run_stage2_client(backbone, client, kinds, config))
            if progress is not None:
                progress("stage2", i + 1, len(federation.clients))
    t3 = time.perf_counter()
    report = evaluate_experiment(federation, config, stage1, stage2)
    t4 = time.perf_counter()
    before = timing["partition_s"] + timing["stage1_s"]
    return assemble_result(
        config,
        federation,
        stage1,
        stage2,
        report,
        timing={
            "partition_s": timing["partition_s"],
            "stage1_s": timing["stage1_s"],
            "stage2_s": t3 - t2,
            "evaluate_s": t4 - t3,
            "total_s": before + (t4 - t2),
        },
        data_sha256=cohort.source_sha256,
        notes=cohort.notes,
    )
