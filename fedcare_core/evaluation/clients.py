"""Per-client and pooled evaluation on each client's own held-out test set (SPEC §3).

Each client is scored with the model it would deploy (:mod:`fedcare_core.predict.predictors`): its
personalised model for personalised methods, the global model otherwise. Pooled metrics
concatenate every client's test predictions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import torch

from fedcare_core.data.clients import ClientData, Federation, SplitArrays
from fedcare_core.evaluation.clinical import clinical_summary
from fedcare_core.evaluation.metrics import compute_metric
from fedcare_core.nn.losses import predict

#: Predicts raw scores for one objective on a split: (split, objective) -> scores.
Scorer = Callable[[SplitArrays, str], torch.Tensor]


@dataclass(frozen=True)
class _ClientMetric:
    """One client's metric for one objective."""

    client_id: int
    value: float | None
    n: int
    reason: str | None = None


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
    #: The pooled predictions' clinical metrics (:func:`~.clinical.clinical_summary`).
    clinical: dict[str, float | None] = field(default_factory=dict)


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


def evaluate(
    federation: Federation,
    scorers: Sequence[Scorer],
    split: str = "test",
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

    Returns
    -------
    EvaluationReport
        Pooled value, mean and std over clients, and per-client values (``None`` with a reason
        where a metric is undefined, e.g. a single class in a small test set).
    """
    reports: list[_ObjectiveReport] = []
    for obj in federation.objectives:
        ys: list[np.ndarray] = []
        ps: list[np.ndarray] = []
        per_client: list[_ClientMetric] = []
        for client, scorer in zip(federation.clients, scorers, strict=True):
            if obj.name not in client.objectives:
                continue
            y, p = _predictions(client, scorer, obj.name, obj.kind, split)
            ys.append(y)
            ps.append(p)
            m = compute_metric(obj.kind, y, p)
            per_client.append(_ClientMetric(client.client_id, m.value, m.n, m.reason))
        metric = "auroc" if obj.kind == "binary" else "mae_days"
        if not ys:
            reports.append(_ObjectiveReport(obj.name, metric, None, None, [], "no client"))
            continue
        y_all, p_all = np.concatenate(ys), np.concatenate(ps)
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
                clinical=clinical_summary(obj.kind, y_all, p_all),
            )
        )
    return EvaluationReport(reports)


def evaluate_with_validation(federation: Federation, scorers: Sequence[Scorer]) -> EvaluationReport:
    """:func:`evaluate` on the test splits, each objective carrying its validation report.

    Parameters
    ----------
    federation, scorers
        As for :func:`evaluate`.

    Returns
    -------
    EvaluationReport
        The test report; every :class:`_ObjectiveReport` has ``validation`` set.
    """
    test = evaluate(federation, scorers, "test")
    val = evaluate(federation, scorers, "val")
    return EvaluationReport(
        [replace(t, validation=v) for t, v in zip(test.objectives, val.objectives, strict=True)]
    )


def _predictions(
    client: ClientData, scorer: Scorer, objective: str, kind: str, split: str
) -> tuple[np.ndarray, np.ndarray]:
    data = client.split(split)
    j = client.objectives.index(objective)
    y = data.y[:, j]
    mask = np.isfinite(y)
    if data.n == 0 or not mask.any():
        return y[mask], np.zeros(0)
    with torch.no_grad():
        scores = scorer(data, objective)
        pred = predict(kind, scores).numpy().astype(np.float64)
    return y[mask], pred[mask]
