"""Dispatch for the baselines: the same phases and the same :class:`ExperimentResult` as FedCARE.

Clients, splits, objectives and evaluation are FedCARE's (:func:`prepare_federation`,
:func:`fedcare_core.evaluate.evaluate`); only the training differs. Every client is scored on
its own test split with the model it deploys: the global FullMLP for FedAvg, FedProx, FMGDA,
FSMGDA and Centralised, its own model for PAFNet and Local. There is no Stage 2 (``stage2`` is
empty); per-round traces go to ``rounds`` (λ* for FMGDA/FSMGDA only).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np

from fedcare_core.baselines.backend import BaselineBackend, backend_refusal
from fedcare_core.baselines.bounds import run_centralised, run_local
from fedcare_core.baselines.common import ProgressFn, global_scorer
from fedcare_core.baselines.features import union_federation
from fedcare_core.baselines.fedavg import run_fedavg
from fedcare_core.baselines.fmgda import run_mgda
from fedcare_core.baselines.pafnet import pafnet_scorer, run_pafnet
from fedcare_core.config import BASELINE_ALGORITHMS, ExperimentConfig
from fedcare_core.data.cohort import Cohort
from fedcare_core.data.partition import FeaturePartition
from fedcare_core.errors import ConfigError
from fedcare_core.evaluate import EvaluationReport, Scorer, evaluate
from fedcare_core.models import MultiObjectiveModel
from fedcare_core.params import ParamLayout, get_buffers, get_params, param_layout
from fedcare_core.stage1 import Stage1Result, load_global_model

if TYPE_CHECKING:
    from fedcare_core.runner import ExperimentResult, Stage1Runner


def _no_rounds(
    objectives: tuple[str, ...], notes: list[str], model: MultiObjectiveModel | None = None
) -> Stage1Result:
    """A Stage 1 result for a method without federated rounds (the bounds)."""
    if model is not None:
        params, buffers, layout = get_params(model), get_buffers(model), param_layout(model)
    else:
        params = buffers = np.zeros(0, dtype=np.float32)
        layout = ParamLayout(total=0, backbone=slice(0, 0), heads={})
    return Stage1Result(params, buffers, [], False, objectives, layout, notes)


def run_baseline(
    cohort: Cohort,
    partition: FeaturePartition,
    config: ExperimentConfig,
    *,
    source: str | None = None,
    progress: ProgressFn | None = None,
    stage1_runner: Stage1Runner | None = None,
) -> ExperimentResult:
    """Run one baseline or bound end to end in process.

    Parameters
    ----------
    cohort
        The loaded dataset.
    partition
        The dataset's default feature partition (ρ from ``config`` is applied here).
    config
        The experiment configuration (validated); ``config.algorithm`` names the method.
    source
        The data file's name, for error messages.
    progress
        Called as ``progress(stage, done, total)``: ``"stage1"`` per round, ``"local"`` per
        client, ``"centralised"`` once.
    stage1_runner
        None: in process. A federated backend (a
        :class:`~fedcare_core.baselines.backend.BaselineBackend`, e.g. the Flower runners)
        runs the rounds of the baselines it lists (FedAvg, FedProx, FMGDA, FSMGDA); the union
        layout, evaluation and the results document stay here, so the document is the
        in-process one. PAFNet and the bounds refuse a backend
        (:data:`~fedcare_core.baselines.backend.IN_PROCESS_ONLY` says why).

    Returns
    -------
    ExperimentResult
        The same document shape as FedCARE's.

    Raises
    ------
    ConfigError
        If the algorithm is not a baseline, or a backend is given that cannot run it.
    """
    from fedcare_core.runner import assemble_result, configure_torch, prepare_federation

    algorithm = config.algorithm
    if algorithm not in BASELINE_ALGORITHMS:
        raise ConfigError(f"{algorithm!r} is not a baseline")
    backend: BaselineBackend | None = None
    if stage1_runner is not None:
        refusal = backend_refusal(algorithm, "federated")
        if refusal is not None:
            raise ConfigError(refusal)
        if (
            not isinstance(stage1_runner, BaselineBackend)
            or algorithm not in stage1_runner.federated_baselines
        ):
            raise ConfigError(
                f"algorithm {algorithm!r} needs --backend local: this backend runs Stage 1 "
                "of fedcare/fedcare-b only"
            )
        backend = stage1_runner
    config.validate()
    configure_torch(config)
    t0 = time.perf_counter()
    federation = prepare_federation(cohort, partition, config, source)
    union, layout = union_federation(federation)
    t1 = time.perf_counter()
    base = config.baselines
    rounds = config.stage1.rounds
    scorers: list[Scorer]
    scored = union
    if algorithm in ("fedavg", "fedprox"):
        mu = base.prox_mu if algorithm == "fedprox" else 0.0
        if backend is not None:
            stage1 = backend.run_federated_baseline(algorithm, federation, layout, config, progress)
        else:
            stage1 = run_fedavg(
                union, config.model, base, rounds, config.seed, prox_mu=mu, progress=progress
            )
        scorers = _global(stage1, layout.width, config, len(federation.clients))
    elif algorithm in ("fmgda", "fsmgda"):
        if backend is not None:
            stage1 = backend.run_federated_baseline(algorithm, federation, layout, config, progress)
        else:
            stage1 = run_mgda(
                union,
                config.model,
                config.stage1,
                config.seed,
                full=algorithm == "fmgda",
                progress=progress,
            )
        scorers = _global(stage1, layout.width, config, len(federation.clients))
    elif algorithm == "pafnet":
        stage1, models = run_pafnet(
            federation, config.model, base, rounds, config.seed, progress=progress
        )
        scorers = [pafnet_scorer(m) for m in models]
        scored = federation
    elif algorithm == "local":
        fits = run_local(union, config.model, base, config.seed, progress=progress)
        scorers = [global_scorer(f.model) for f in fits]
        stage1 = _no_rounds(
            federation.objective_names,
            [f"local: best epoch per client {[f.best_epoch for f in fits]}"],
        )
    else:
        fitted = run_centralised(union, config.model, base, config.seed)
        if progress is not None:
            progress("centralised", 1, 1)
        scorers = [global_scorer(fitted.model) for _ in federation.clients]
        stage1 = _no_rounds(
            federation.objective_names,
            [f"centralised: best epoch {fitted.best_epoch} ({fitted.stopped})"],
            fitted.model,
        )
    t2 = time.perf_counter()
    report: EvaluationReport = evaluate(scored, scorers)
    t3 = time.perf_counter()
    return assemble_result(
        config,
        federation,
        stage1,
        [],
        report,
        timing={
            "partition_s": t1 - t0,
            "stage1_s": t2 - t1,
            "stage2_s": 0.0,
            "evaluate_s": t3 - t2,
            "total_s": t3 - t0,
        },
        data_sha256=cohort.source_sha256,
        notes=cohort.notes,
    )


def _global(stage1: Stage1Result, width: int, config: ExperimentConfig, k: int) -> list[Scorer]:
    model = load_global_model(stage1, width, config.model)
    return [global_scorer(model) for _ in range(k)]
