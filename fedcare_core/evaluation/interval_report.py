"""How the length-of-stay prediction intervals did on the test rows, in the evaluation report.

Each client's deployed model gives a length-of-stay prediction an interval fitted on its own
validation rows (:mod:`fedcare_core.evaluation.conformal`). :func:`with_interval_metrics` scores
those intervals on every client's test rows and adds to each regression objective's clinical
metrics (next to its MAE and bias by length band):

- ``interval_coverage``: the share of test rows whose true length of stay lies in its interval;
- ``interval_width_days``: the intervals' mean width, in days;
- pooled only, ``interval_level``: the intervals' nominal coverage (e.g. 0.9).

Per client (``clients[].clinical``) and pooled over the clients' test rows (``clinical``), with
the clients' spread (``clinical_spread``). A client whose model has no interval (too few
validation rows) adds no value, and its rows are not pooled.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from typing import Any

import numpy as np

from fedcare_core.data.clients import ClientData, Federation, SplitArrays
from fedcare_core.evaluation.clients import EvaluationReport
from fedcare_core.evaluation.conformal import IntervalMetrics, interval_metrics
from fedcare_core.evaluation.uncertainty import spread
from fedcare_core.objectives import objective_kind

__all__ = ["INTERVAL_KEYS", "IntervalScorer", "with_interval_metrics"]

#: Predicts one objective's intervals on a split: (split, objective) -> (low, high) in days,
#: NaN where there is none.
IntervalScorer = Callable[[SplitArrays, str], tuple[np.ndarray, np.ndarray]]
#: The per-client clinical metrics of an interval (each also pooled, with its spread).
INTERVAL_KEYS = ("interval_coverage", "interval_width_days")


def _values(metrics: IntervalMetrics) -> dict[str, float | None]:
    return {"interval_coverage": metrics.coverage, "interval_width_days": metrics.mean_width_days}


def _client_rows(
    client: ClientData, scorer: IntervalScorer, objective: str, split: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The client's labelled rows of ``objective``: labels, lower and upper ends."""
    data = client.split(split)
    y = data.y[:, client.objectives.index(objective)]
    keep = np.isfinite(y)
    if data.n == 0 or not keep.any():
        return np.zeros(0), np.zeros(0), np.zeros(0)
    low, high = scorer(data, objective)
    low, high = np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)
    return y[keep], low[keep], high[keep]


def with_interval_metrics(
    report: EvaluationReport,
    federation: Federation,
    scorers: Sequence[IntervalScorer],
    *,
    level: float | None = None,
    split: str = "test",
) -> EvaluationReport:
    """``report`` with each regression objective's interval coverage and width on ``split``.

    Parameters
    ----------
    report
        The evaluation of the clients' deployed models (:func:`~.clients.evaluate`).
    federation
        The clients, in the order of ``scorers``.
    scorers
        One interval scorer per client.
    level
        The intervals' nominal coverage, recorded as ``interval_level`` (None: not recorded).
    split
        The rows scored (``"test"``, as ``report``'s).

    Returns
    -------
    EvaluationReport
        A copy; a binary objective's report is unchanged.
    """
    kinds = {o.name: o.kind for o in federation.objectives}
    objectives = []
    for rep in report.objectives:
        if rep.name not in kinds or not objective_kind(kinds[rep.name]).interval:
            objectives.append(rep)
            continue
        rows = {
            client.client_id: _client_rows(client, scorer, rep.name, split)
            for client, scorer in zip(federation.clients, scorers, strict=True)
            if rep.name in client.objectives
        }
        own = {cid: interval_metrics(*r) for cid, r in rows.items()}
        clients = [
            replace(c, clinical=c.clinical | _values(own[c.client_id]))
            if c.client_id in own and own[c.client_id].n
            else c
            for c in rep.clients
        ]
        pooled = interval_metrics(
            *(np.concatenate([r[i] for r in rows.values()] or [np.zeros(0)]) for i in range(3))
        )
        values = [_values(m) for m in own.values() if m.n]
        spreads: dict[str, dict[str, Any]] = {
            key: asdict(spread(v[key] for v in values)) for key in INTERVAL_KEYS
        }
        clinical = rep.clinical | _values(pooled)
        if level is not None:
            clinical["interval_level"] = float(level)
        objectives.append(
            replace(
                rep,
                clients=clients,
                clinical=clinical,
                clinical_spread=rep.clinical_spread | (spreads if values else {}),
            )
        )
    return replace(report, objectives=objectives)
