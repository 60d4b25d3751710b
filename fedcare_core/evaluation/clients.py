"""Per-client and pooled evaluation on each client's own held-out test set (SPEC §3).

Each client is scored with the model it would deploy (:mod:`fedcare_core.predict.predictors`): its
personalised model for personalised methods, the global model otherwise. Pooled metrics
concatenate every client's test predictions.

Beside AUROC and MAE, every objective carries the clinical metrics of
:mod:`fedcare_core.evaluation.clinical`, pooled and per client with their spread over clients.
A binary objective's operating point is each client's own: the highest threshold whose
sensitivity on the client's validation rows reaches the target (0.8 by default), applied to its
test rows; the pooled sensitivity, specificity, PPV and NPV sum the clients' counts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace

import numpy as np
import torch

from fedcare_core.data.clients import ClientData, Federation, SplitArrays
from fedcare_core.evaluation.clinical import (
    Confusion,
    clinical_summary,
    confusion_at,
    threshold_for_sensitivity,
)
from fedcare_core.evaluation.metrics import compute_metric
from fedcare_core.evaluation.uncertainty import spread

#: Predicts one objective on a split: (split, objective) -> probabilities or days (float64).
Scorer = Callable[[SplitArrays, str], np.ndarray]
#: The default target sensitivity of a client's operating point.
DEFAULT_TARGET_SENSITIVITY = 0.8
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


#: Objective name -> (client id, labels, predictions) of every client pursuing it.
_Predictions = dict[str, list[tuple[int, np.ndarray, np.ndarray]]]


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
    target_sensitivity: float = DEFAULT_TARGET_SENSITIVITY,
) -> EvaluationReport:
    """:func:`evaluate` on the test splits at operating points chosen on the validation splits.

    Parameters
    ----------
    federation, scorers
        As for :func:`evaluate`.
    target_sensitivity
        The sensitivity each client's threshold reaches on its validation rows.

    Returns
    -------
    EvaluationReport
        The test report; every :class:`_ObjectiveReport` has ``validation`` set.
    """
    val_predictions = _client_predictions(federation, scorers, "val")
    thresholds = operating_points(federation, val_predictions, target_sensitivity)
    test = _report(federation, _client_predictions(federation, scorers, "test"), thresholds)
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
        (name, client_id): threshold_for_sensitivity(y, p, target_sensitivity).value
        for name, rows in predictions.items()
        if kinds[name] == "binary"
        for client_id, y, p in rows
    }


def _client_predictions(
    federation: Federation, scorers: Sequence[Scorer], split: str
) -> _Predictions:
    out: _Predictions = {}
    for obj in federation.objectives:
        out[obj.name] = [
            (client.client_id, *_predictions(client, scorer, obj.name, split))
            for client, scorer in zip(federation.clients, scorers, strict=True)
            if obj.name in client.objectives
        ]
    return out


def _report(
    federation: Federation, predictions: _Predictions, thresholds: Thresholds
) -> EvaluationReport:
    reports: list[_ObjectiveReport] = []
    for obj in federation.objectives:
        rows = predictions[obj.name]
        metric = "auroc" if obj.kind == "binary" else "mae_days"
        if not rows:
            reports.append(_ObjectiveReport(obj.name, metric, None, None, [], "no client"))
            continue
        per_client, confusions = [], []
        for client_id, y, p in rows:
            m = compute_metric(obj.kind, y, p)
            clinical = clinical_summary(obj.kind, y, p)
            threshold = thresholds.get((obj.name, client_id))
            if threshold is not None:
                confusion = confusion_at(y, p, threshold)
                confusions.append(confusion)
                clinical |= {"threshold": threshold} | _rates(confusion)
            per_client.append(_ClientMetric(client_id, m.value, m.n, m.reason, clinical))
        y_all = np.concatenate([y for _, y, _ in rows])
        p_all = np.concatenate([p for _, _, p in rows])
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
                clinical=clinical_summary(obj.kind, y_all, p_all) | _pooled_rates(confusions),
                clinical_spread=_spreads(per_client),
            )
        )
    return EvaluationReport(reports)


def _rates(confusion: Confusion) -> dict[str, float | None]:
    return {name: getattr(confusion, name) for name in _RATES}


def _pooled_rates(confusions: list[Confusion]) -> dict[str, float | None]:
    """The rates of the clients' summed counts, each at its own operating point."""
    if not confusions:
        return {}
    tp, fp, tn, fn = (sum(getattr(c, k) for c in confusions) for k in ("tp", "fp", "tn", "fn"))
    ratio = lambda num, den: num / den if den else None  # noqa: E731
    return {
        "sensitivity": ratio(tp, tp + fn),
        "specificity": ratio(tn, tn + fp),
        "ppv": ratio(tp, tp + fp),
        "npv": ratio(tn, tn + fn),
    }


def _spreads(per_client: list[_ClientMetric]) -> dict[str, dict[str, float | None]]:
    keys = dict.fromkeys(k for c in per_client for k in c.clinical if k != "threshold")
    return {
        key: {k: v for k, v in asdict(spread(c.clinical.get(key) for c in per_client)).items()}
        for key in keys
    }


def _predictions(
    client: ClientData, scorer: Scorer, objective: str, split: str
) -> tuple[np.ndarray, np.ndarray]:
    data = client.split(split)
    j = client.objectives.index(objective)
    y = data.y[:, j]
    mask = np.isfinite(y)
    if data.n == 0 or not mask.any():
        return y[mask], np.zeros(0)
    with torch.no_grad():
        pred = np.asarray(scorer(data, objective), dtype=np.float64)
    return y[mask], pred[mask]
