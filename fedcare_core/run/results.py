"""What a run returns: the result document, its timing and its assembly.

A leaf of the run pipeline: the algorithms (:mod:`fedcare_core.algorithms`) and the pipeline
(:mod:`fedcare_core.run.pipeline`) import it; it imports neither.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from fedcare_core import __version__
from fedcare_core.config import ExperimentConfig
from fedcare_core.config.preferences import Preference
from fedcare_core.data.clients import Federation
from fedcare_core.data.cohort import Cohort
from fedcare_core.evaluation.clients import EvaluationReport
from fedcare_core.nn.cpu_kernels import kernel_path
from fedcare_core.predict.predictors import ClientPredictor
from fedcare_core.privacy.mechanism import privacy_record
from fedcare_core.stage1.loop import Stage1Result
from fedcare_core.stage2.personalise import Stage2Result

#: The phases a run is timed by, in the order of the ``timing`` section.
_PHASES = ("partition", "stage1", "stage2", "evaluate")


@dataclass(frozen=True)
class DataProvenance:
    """Where a run's data came from: the source file's SHA-256 and the loader's notes."""

    sha256: str
    notes: tuple[str, ...] = ()

    @classmethod
    def of(cls, cohort: Cohort) -> DataProvenance:
        """The provenance of a loaded cohort."""
        return cls(cohort.source_sha256, tuple(cohort.notes))


class PhaseTimer:
    """Wall seconds per phase (``<phase>_s``) and their sum (``total_s``).

    Parameters
    ----------
    already
        Seconds spent before the timer existed, e.g. ``{"partition_s": 1.2}`` for a federation
        built elsewhere, or a shared Stage 1's ``stage1_s``.
    """

    def __init__(self, already: Mapping[str, float] | None = None) -> None:
        self.seconds = {f"{p}_s": 0.0 for p in _PHASES} | dict(already or {})

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Add the wall time of the ``with`` block to ``<name>_s``."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[f"{name}_s"] += time.perf_counter() - t0

    def timing(self) -> dict[str, float]:
        """The ``timing`` section: every phase's seconds and ``total_s``."""
        return self.seconds | {"total_s": sum(self.seconds[f"{p}_s"] for p in _PHASES)}


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
    #: The model each client deploys (what ``evaluation`` scored), in client order.
    predictors: list[ClientPredictor] = field(default_factory=list)
    #: Where the federated rounds ran: a registered backend's name
    #: (:mod:`fedcare_core.config.backends`), or ``"federation"`` for a site of a multi-site run.
    backend: str = "local"

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
                    | ({"clinical": dict(c.clinical)} if c.clinical else {})
                    for c in rep.clients
                ],
            }
            if rep.clinical:
                entry["clinical"] = dict(rep.clinical)
            if rep.clinical_spread:
                entry["clinical_spread"] = {k: dict(v) for k, v in rep.clinical_spread.items()}
            if rep.intervals:
                entry["intervals"] = dict(rep.intervals)
            if rep.subgroups:
                entry["subgroups"] = dict(rep.subgroups)
            if rep.reason is not None or rep.pooled is None:
                entry["reason"] = rep.reason or "undefined"
            stated = _stated_preferences(self.federation, rep.name)
            if stated:
                entry["preferences"] = stated
            if rep.validation is not None:
                entry["validation"] = {
                    "pooled": rep.validation.pooled,
                    "mean_over_clients": rep.validation.mean_over_clients,
                }
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
                | ({} if r.epsilon is None else {"epsilon": r.epsilon})
                for r in self.stage1.rounds
            ],
            "stage1": {
                "converged": self.stage1.converged,
                "rounds_run": len(self.stage1.rounds),
                "notes": list(self.stage1.notes),
                # Rounds summed by SecAgg+ (only a Flower backend runs them; others refuse).
                "secure_aggregation": self.config.stage1.secagg,
                "backend": self.backend,
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
                | _preference_entry(c.preferences)
                | _model_entry(self.predictors, i)
                for i, c in enumerate(fed.clients)
            ],
            "data": {
                "sha256": self.data_sha256,
                "common_features": list(fed.partition.common),
                "private_pools": {k: list(v) for k, v in fed.partition.private.items()},
                "rho": fed.partition.disparity_ratio(),
                "notes": self.notes,
            },
            "timing": self.timing,
        } | _privacy_section(self.config, self.stage1)


def _preference_entry(preferences: Mapping[str, Preference]) -> dict[str, Any]:
    """``{"preferences": {objective: "fair(race)"}}`` of a client that states any."""
    if not preferences:
        return {}
    return {"preferences": {o: p.to_dict() | {"label": p.label} for o, p in preferences.items()}}


def _stated_preferences(federation: Federation, objective: str) -> dict[str, list[int]]:
    """Each preference stated for ``objective`` → the clients stating it (plain ones too)."""
    out: dict[str, list[int]] = {}
    for c in federation.clients:
        if objective in c.objectives:
            preference = c.preferences.get(objective)
            label = "plain" if preference is None else preference.label
            out.setdefault(label, []).append(c.client_id)
    return out if set(out) != {"plain"} else {}


def _model_entry(predictors: Sequence[ClientPredictor], index: int) -> dict[str, Any]:
    """How the ``index``-th client's model was fitted to its validation rows, where it was.

    ``{"calibration": {objective: summary}}`` for its binary objectives' calibrators and
    ``{"intervals": {objective: summary}}`` for its length-of-stay intervals.
    """
    if index >= len(predictors):
        return {}
    predictor = predictors[index]
    out: dict[str, Any] = {}
    if predictor.calibration:
        out["calibration"] = {s: c.summary() for s, c in predictor.calibration.items()}
    if predictor.intervals:
        out["intervals"] = {s: i.summary() for s, i in predictor.intervals.items()}
    return out


def _privacy_section(config: ExperimentConfig, stage1: Stage1Result) -> dict[str, Any]:
    """``{"privacy": …}`` for a run under DP (the releases its rounds made), else nothing."""
    settings = config.stage1.privacy()
    if settings is None:
        return {}
    released = [r for r in stage1.rounds if r.epsilon is not None]
    sites = config.data.clients if config.stage1.secagg else None  # SecAgg: the sites' noise
    contributors = [len(r.participants) for r in released]
    record = privacy_record(settings, len(released), noise_sites=sites, contributors=contributors)
    return {"privacy": record}


def assemble_result(
    config: ExperimentConfig,
    federation: Federation,
    stage1: Stage1Result,
    stage2: Sequence[Stage2Result],
    evaluation: EvaluationReport,
    predictors: Sequence[ClientPredictor],
    *,
    timing: Mapping[str, float],
    provenance: DataProvenance,
    backend: str = "local",
) -> ExperimentResult:
    """Put a run's parts together as an :class:`ExperimentResult`.

    Parameters
    ----------
    config
        The experiment configuration.
    federation
        The clients.
    stage1
        The federated rounds' result.
    stage2
        Per-client Stage 2 results (any order; stored by client id).
    evaluation
        Every client scored with the model it deploys.
    predictors
        Those models, in client order.
    timing
        :meth:`PhaseTimer.timing`.
    provenance
        The data's checksum and loading notes.
    backend
        Where the federated rounds ran (:attr:`ExperimentResult.backend`).

    Returns
    -------
    ExperimentResult
        The run's result.
    """
    return ExperimentResult(
        config=config,
        federation=federation,
        stage1=stage1,
        # The cross-fitted validation predictions served calibration; they stay at the client.
        stage2=[
            replace(s, validation_outputs={}) for s in sorted(stage2, key=lambda s: s.client_id)
        ],
        evaluation=evaluation,
        timing=dict(timing),
        data_sha256=provenance.sha256,
        notes=list(provenance.notes),
        predictors=list(predictors),
        backend=backend,
    )
