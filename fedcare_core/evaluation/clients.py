"""Per-client and pooled evaluation on each client's own held-out test set (SPEC §3).

Each client is scored with the model it would deploy (:mod:`fedcare_core.predict.predictors`): its
personalised model for personalised methods, the global model otherwise. Pooled metrics
concatenate every client's test predictions.

Beside AUROC and MAE, every objective carries the clinical metrics of
:mod:`fedcare_core.evaluation.clinical`, pooled and per client with their spread over clients.
A binary objective's operating point is each client's own: the highest threshold whose
sensitivity on the client's validation rows reaches the target (0.8 by default), applied to its
test rows; the pooled sensitivity, specificity, PPV and NPV sum the clients' counts. Beside it,
each client's *decision threshold*: the calibrated risk above which its training loss flags a
patient, ``1/(1 + w)`` for a loss weighting a positive ``w`` times a negative (a sensitivity
preference raises ``w``; :func:`decision_points`), with the rates and the net benefit there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import torch

from fedcare_core.config.preferences import decision_threshold
from fedcare_core.data.clients import ClientData, Federation, SplitArrays
from fedcare_core.evaluation.clinical import (
    Confusion,
    clinical_summary,
    confusion_at,
    confusion_of_counts,
    threshold_for_sensitivity,
)
from fedcare_core.evaluation.pooled import (
    EvaluationSettings,
    PooledRows,
    pooled_intervals,
    subgroup_results,
)
from fedcare_core.evaluation.uncertainty import spread
from fedcare_core.nn.training import client_losses, objective_kinds
from fedcare_core.objectives import compute_metric, objective_kind

#: Predicts one objective on a split: (split, objective) -> probabilities or days (float64).
Scorer = Callable[[SplitArrays, str], np.ndarray]
#: (objective, client id) -> the client's threshold for that objective (None: undefined).
Thresholds = Mapping[tuple[str, int], float | None]
#: The rates reported at a client's operating point.
_RATES = ("sensitivity", "specificity", "ppv", "npv")


@dataclass(frozen=True)
class _ClientMetric:
    """One client's metric for one objective, and its clinical metrics."""

    client_id: int
    value: float | None
    n: int
    reason: str | None = None
    clinical: dict[str, float | None] = field(default_factory=dict)


@dataclass(frozen=True)
class _ObjectiveReport:
    """Metrics of one objective over the federation."""

    name: str
    metric: str
    pooled: float | None
    mean_over_clients: float | None
    clients: list[_ClientMetric]
    reason: str | None = None
    std_over_clients: float | None = None
    #: The same metrics on the clients' validation splits (for choosing a configuration
    #: without looking at test data), or None.
    validation: _ObjectiveReport | None = None
    #: The pooled predictions' clinical metrics (:func:`~.clinical.clinical_summary`), and at
    #: the clients' operating points the pooled rates.
    clinical: dict[str, float | None] = field(default_factory=dict)
    #: Each per-client clinical metric's spread over clients: mean, std, min, max, n.
    clinical_spread: dict[str, dict[str, float | None]] = field(default_factory=dict)
    #: Bootstrap 95 % intervals of the pooled metrics, resampling patients
    #: (:func:`~.pooled.pooled_intervals`).
    intervals: dict[str, Any] = field(default_factory=dict)
    #: Each sensitive attribute's subgroups and largest gap (:func:`~.pooled.subgroup_results`).
    subgroups: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class EvaluationReport:
    """Per-objective reports, in the federation's objective order."""

    objectives: list[_ObjectiveReport] = field(default_factory=list)

    def get(self, name: str) -> _ObjectiveReport:
        """The report of objective ``name``."""
        for o in self.objectives:
            if o.name == name:
                return o
        raise KeyError(name)


@dataclass(frozen=True)
class _ClientRows:
    """One client's labelled rows of one objective: labels, predictions and row tags."""

    client_id: int
    y: np.ndarray
    p: np.ndarray
    groups: np.ndarray
    subgroups: Mapping[str, np.ndarray]


#: Objective name -> the rows of every client pursuing it.
_Predictions = dict[str, list[_ClientRows]]


def evaluate(
    federation: Federation,
    scorers: Sequence[Scorer],
    split: str = "test",
    *,
    thresholds: Thresholds | None = None,
) -> EvaluationReport:
    """Score every client on its own ``split`` and aggregate per objective.

    Parameters
    ----------
    federation
        Clients and objectives.
    scorers
        One scorer per client (same order as ``federation.clients``).
    split
        ``"test"`` (default) or ``"val"``.
    thresholds
        Each client's operating point per binary objective (:func:`operating_points`); none:
        no rates at a threshold.

    Returns
    -------
    EvaluationReport
        Pooled value, mean and std over clients, and per-client values (``None`` with a reason
        where a metric is undefined, e.g. a single class in a small test set), with their
        clinical metrics.
    """
    predictions = _client_predictions(federation, scorers, split)
    return _report(federation, predictions, thresholds or {})


def evaluate_with_validation(
    federation: Federation,
    scorers: Sequence[Scorer],
    settings: EvaluationSettings | None = None,
) -> EvaluationReport:
    """:func:`evaluate` on the test splits at operating points chosen on the validation splits.

    Parameters
    ----------
    federation, scorers
        As for :func:`evaluate`.
    settings
        The target sensitivity of each client's threshold (on its validation rows), and the
        bootstrap of the pooled test metrics' intervals (None: the defaults).

    Returns
    -------
    EvaluationReport
        The test report, with intervals and subgroups; every :class:`_ObjectiveReport` has
        ``validation`` set.
    """
    settings = settings or EvaluationSettings()
    val_predictions = _client_predictions(federation, scorers, "val")
    thresholds = operating_points(federation, val_predictions, settings.target_sensitivity)
    decisions = decision_points(federation, calibrated=settings.calibrated)
    test_predictions = _client_predictions(federation, scorers, "test")
    test = _report(federation, test_predictions, thresholds, settings, decisions)
    val = _report(federation, val_predictions, {})
    return EvaluationReport(
        [replace(t, validation=v) for t, v in zip(test.objectives, val.objectives, strict=True)]
    )


def operating_points(
    federation: Federation, predictions: _Predictions, target_sensitivity: float
) -> dict[tuple[str, int], float | None]:
    """Each client's threshold per binary objective, from its own validation predictions."""
    kinds = {o.name: o.kind for o in federation.objectives}
    return {
        (name, r.client_id): threshold_for_sensitivity(r.y, r.p, target_sensitivity).value
        for name, rows in predictions.items()
        if objective_kind(kinds[name]).risk
        for r in rows
    }


def decision_points(federation: Federation, *, calibrated: bool = True) -> Thresholds:
    """Each client's decision threshold per binary objective: where its loss flags a patient.

    Parameters
    ----------
    federation
        The clients (their training labels and preferences set each loss's positive weight).
    calibrated
        Whether the risks are calibrated (``1/(1 + w)``) or the network's class-weighted
        probabilities (0.5: where the weighted loss itself flips).

    Returns
    -------
    dict
        ``(objective, client id)`` → threshold.
    """
    kinds = objective_kinds(federation)
    out: dict[tuple[str, int], float | None] = {}
    for client in federation.clients:
        for name, loss in client_losses(client, kinds).items():
            if objective_kind(loss.kind).risk:
                cut = decision_threshold(loss.pos_weight) if calibrated else 0.5
                out[(name, client.client_id)] = cut
    return out


def _client_predictions(
    federation: Federation, scorers: Sequence[Scorer], split: str
) -> _Predictions:
    out: _Predictions = {}
    for obj in federation.objectives:
        out[obj.name] = [
            _predictions(client, scorer, obj.name, split)
            for client, scorer in zip(federation.clients, scorers, strict=True)
            if obj.name in client.objectives
        ]
    return out


def _report(
    federation: Federation,
    predictions: _Predictions,
    thresholds: Thresholds,
    settings: EvaluationSettings | None = None,
    decisions: Thresholds | None = None,
) -> EvaluationReport:
    """Per-objective reports; with ``settings``, the pooled intervals and subgroups too.

    ``decisions``: each client's decision threshold (:func:`decision_points`; None: none).
    """
    decisions = decisions or {}
    reports: list[_ObjectiveReport] = []
    for obj in federation.objectives:
        rows = predictions[obj.name]
        metric = obj.metric
        if not rows:
            reports.append(_ObjectiveReport(obj.name, metric, None, None, [], "no client"))
            continue
        per_client, confusions, decided = [], [], []
        for r in rows:
            m = compute_metric(obj.kind, r.y, r.p)
            clinical = clinical_summary(obj.kind, r.y, r.p)
            threshold = thresholds.get((obj.name, r.client_id))
            if threshold is not None:
                confusion = confusion_at(r.y, r.p, threshold)
                confusions.append(confusion)
                clinical |= {"threshold": threshold} | _rates(confusion)
            decision = decisions.get((obj.name, r.client_id))
            if decision is not None:
                decided.append(confusion_at(r.y, r.p, decision))
                clinical |= _decision_rates([decided[-1]]) | {"decision_threshold": decision}
            per_client.append(_ClientMetric(r.client_id, m.value, m.n, m.reason, clinical))
        pooled_rows = _pooled_rows(rows, thresholds, obj.name)
        y_all, p_all = pooled_rows.y, pooled_rows.p
        pooled = compute_metric(obj.kind, y_all, p_all)
        values = [c.value for c in per_client if c.value is not None]
        reason = pooled.reason
        if not values and reason is None:
            reason = "undefined at every client"
        reports.append(
            _ObjectiveReport(
                name=obj.name,
                metric=metric,
                pooled=pooled.value,
                mean_over_clients=float(np.mean(values)) if values else None,
                clients=per_client,
                reason=reason,
                std_over_clients=float(np.std(values)) if values else None,
                clinical=clinical_summary(obj.kind, y_all, p_all)
                | _pooled_rates(confusions)
                | _decision_rates(decided),
                clinical_spread=_spreads(per_client),
                intervals={}
                if settings is None
                else pooled_intervals(obj.kind, pooled_rows, settings),
                subgroups={} if settings is None else subgroup_results(obj.kind, pooled_rows),
            )
        )
    return EvaluationReport(reports)


def _pooled_rows(rows: list[_ClientRows], thresholds: Thresholds, name: str) -> PooledRows:
    """Every client's rows concatenated; patients made unique across clients."""
    offsets = np.cumsum([0] + [int(r.groups.max()) + 1 if len(r.groups) else 0 for r in rows])
    attributes = dict.fromkeys(a for r in rows for a in r.subgroups)
    cuts = [thresholds.get((name, r.client_id)) for r in rows]
    flagged = (
        None
        if any(t is None for t in cuts)
        else np.concatenate([r.p >= t for r, t in zip(rows, cuts, strict=True)])
    )
    return PooledRows(
        y=np.concatenate([r.y for r in rows]),
        p=np.concatenate([r.p for r in rows]),
        groups=np.concatenate([r.groups + o for r, o in zip(rows, offsets, strict=False)]),
        subgroups={
            a: np.concatenate([r.subgroups.get(a, np.full(len(r.y), "missing")) for r in rows])
            for a in attributes
        },
        flagged=flagged,
    )


def _rates(confusion: Confusion) -> dict[str, float | None]:
    return {name: getattr(confusion, name) for name in _RATES}


def _pooled_rates(confusions: list[Confusion]) -> dict[str, float | None]:
    """The rates of the clients' summed counts, each at its own operating point."""
    if not confusions:
        return {}
    tp, fp, tn, fn = (sum(getattr(c, k) for c in confusions) for k in ("tp", "fp", "tn", "fn"))
    return _rates(confusion_of_counts(float("nan"), tp, fp, tn, fn))


def _decision_rates(confusions: list[Confusion]) -> dict[str, float | None]:
    """Sensitivity, specificity, PPV and net benefit at the clients' decision thresholds.

    Net benefit (Vickers & Elkin 2006): ``(TP − FP · t/(1 − t)) / n`` at each client's own
    threshold ``t``, summed over the clients; ``net_benefit_all`` is flagging every patient's
    (``(P − N · t/(1 − t)) / n``), the reference a model must beat to be worth using there.
    """
    if not confusions:
        return {}
    tp, fp, tn, fn = (sum(getattr(c, k) for c in confusions) for k in ("tp", "fp", "tn", "fn"))
    rates = confusion_of_counts(float("nan"), tp, fp, tn, fn)
    n = sum(c.n for c in confusions)
    odds = [c.threshold / (1.0 - c.threshold) if c.threshold < 1 else 0.0 for c in confusions]
    harm = sum(c.fp * o for c, o in zip(confusions, odds, strict=True))
    harm_all = sum((c.fp + c.tn) * o for c, o in zip(confusions, odds, strict=True))
    return {
        "decision_sensitivity": rates.sensitivity,
        "decision_specificity": rates.specificity,
        "decision_ppv": rates.ppv,
        "net_benefit": (tp - harm) / n if n else None,
        "net_benefit_all": (tp + fn - harm_all) / n if n else None,
    }


def _spreads(per_client: list[_ClientMetric]) -> dict[str, dict[str, float | None]]:
    keys = dict.fromkeys(
        k for c in per_client for k in c.clinical if k not in ("threshold", "decision_threshold")
    )
    return {
        key: {k: v for k, v in asdict(spread(c.clinical.get(key) for c in per_client)).items()}
        for key in keys
    }


def _predictions(client: ClientData, scorer: Scorer, objective: str, split: str) -> _ClientRows:
    data = client.split(split)
    y = data.y[:, client.objectives.index(objective)]
    mask = np.isfinite(y)
    groups = np.arange(data.n) if data.groups is None else data.groups
    subgroups = {a: labels[mask] for a, labels in data.subgroups.items()}
    if data.n == 0 or not mask.any():
        return _ClientRows(client.client_id, y[mask], np.zeros(0), groups[mask], subgroups)
    with torch.no_grad():
        pred = np.asarray(scorer(data, objective), dtype=np.float64)
    return _ClientRows(client.client_id, y[mask], pred[mask], groups[mask], subgroups)
