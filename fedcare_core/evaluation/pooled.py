"""A pooled objective's bootstrap intervals over patients and its subgroups (issue 31).

Each declared sensitive attribute's subgroups are reported with their largest gap.

The evaluation (:mod:`fedcare_core.evaluation.clients`) hands these every client's test rows
concatenated, with each row's patient (an ordinal made unique across clients, never a key),
its subgroup labels, and for a binary objective whether the row is flagged at its client's
operating point.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from fedcare_core.evaluation.clinical import auprc, brier
from fedcare_core.evaluation.uncertainty import (
    DEFAULT_SUBGROUP_MIN_N,
    MetricFn,
    bootstrap_interval,
    subgroup_metrics,
)
from fedcare_core.objectives import ObjectiveKind, objective_kind
from fedcare_core.objectives.metrics import MetricValue

#: The subgroup label of a missing attribute value (:mod:`fedcare_core.data.subgroups`).
MISSING = "missing"
#: The pooled metrics of a risk given a bootstrap interval, beside its kind's main metric.
RISK_INTERVAL_METRICS: dict[str, MetricFn] = {"auprc": auprc, "brier": brier}


def interval_metrics(kind: ObjectiveKind) -> dict[str, MetricFn]:
    """The pooled metrics of an objective of ``kind`` given a bootstrap interval, by name."""
    extra = RISK_INTERVAL_METRICS if kind.risk else {}
    return {kind.metric: kind.score, **extra}


@dataclass(frozen=True)
class EvaluationSettings:
    """How a run's evaluation reports its clinical metrics.

    Parameters
    ----------
    target_sensitivity
        The sensitivity each client's threshold reaches on its validation rows.
    bootstrap
        Resamples of patients for the pooled metrics' 95 % intervals (0: no interval).
    seed
        The resampling's seed (the run's).
    calibrated
        Whether the risks are calibrated: each client's decision threshold is then its loss's
        cost threshold ``1/(1 + w)`` (:func:`~fedcare_core.config.preferences.decision_threshold`),
        otherwise 0.5 on the network's own class-weighted probability.
    """

    target_sensitivity: float = 0.8
    bootstrap: int = 200
    seed: int = 0
    calibrated: bool = True


@dataclass(frozen=True)
class PooledRows:
    """Every client's test rows of one objective, concatenated.

    ``groups``: each row's patient, unique across clients; ``subgroups``: attribute → label per
    row; ``flagged``: whether a binary objective's row is at or above its client's threshold
    (None: no threshold).
    """

    y: np.ndarray
    p: np.ndarray
    groups: np.ndarray
    subgroups: Mapping[str, np.ndarray]
    flagged: np.ndarray | None = None


def pooled_intervals(kind: str, rows: PooledRows, settings: EvaluationSettings) -> dict[str, Any]:
    """Percentile bootstrap 95 % intervals of the pooled metrics, resampling patients.

    Returns
    -------
    dict
        Metric → ``{"low", "high", "level", "resamples", "patients"}`` (``resamples``: those that
        defined the metric); empty when ``settings.bootstrap`` is 0 or there is no row.
    """
    if settings.bootstrap == 0 or len(rows.y) == 0:
        return {}
    out: dict[str, Any] = {}
    for name, fn in interval_metrics(objective_kind(kind)).items():
        b = bootstrap_interval(
            fn, rows.y, rows.p, rows.groups, n_boot=settings.bootstrap, seed=settings.seed
        )
        out[name] = {
            "low": b.low,
            "high": b.high,
            "level": b.level,
            "resamples": b.n_defined,
            "patients": b.n_groups,
        }
    return out


def _sensitivity(y: np.ndarray, flagged: np.ndarray) -> MetricValue:
    positives = y > 0.5
    n = int(positives.sum())
    if n == 0:
        return MetricValue(None, 0, "no positive row")
    return MetricValue(float(flagged[positives].mean()), n)


def _smaller_class(y: np.ndarray) -> int:
    """Rows of the rarer class: what an AUROC's precision rests on."""
    positives = int((y > 0.5).sum())
    return min(positives, len(y) - positives)


def subgroup_results(kind: str, rows: PooledRows) -> dict[str, Any]:
    """Each sensitive attribute's subgroups with their largest gap.

    Per subgroup: the main metric and, for a binary objective, the sensitivity at the
    clients' thresholds.

    Returns
    -------
    dict
        Attribute → metric → ``{"groups": [{"group", "value", "n", "eligible"}], "gap",
        "highest", "lowest", "min_n"}``; a subgroup counts towards the gap from
        :data:`~fedcare_core.evaluation.uncertainty.DEFAULT_SUBGROUP_MIN_N` rows (AUROC: rows
        of each class; sensitivity: positive rows). Rows whose attribute is missing belong to
        no subgroup.
    """
    of = objective_kind(kind)
    metrics: dict[str, tuple[MetricFn, np.ndarray]] = {of.metric: (of.score, rows.p)}
    if of.risk and rows.flagged is not None:
        metrics["sensitivity"] = (_sensitivity, rows.flagged)
    out: dict[str, Any] = {}
    for attribute, labels in rows.subgroups.items():
        values = labels.astype(object)
        values[labels == MISSING] = None
        out[attribute] = {}
        for name, (fn, predictions) in metrics.items():
            report = subgroup_metrics(
                fn,
                rows.y,
                predictions,
                values,
                min_n=DEFAULT_SUBGROUP_MIN_N,
                counted=_smaller_class if of.risk and name == of.metric else None,
            )
            out[attribute][name] = {
                "groups": [
                    {"group": g.group, "value": g.value, "n": g.n, "eligible": g.eligible}
                    for g in report.groups
                ],
                "gap": report.gap,
                "highest": report.highest,
                "lowest": report.lowest,
                "min_n": report.min_n,
            }
    return out
