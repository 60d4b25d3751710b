"""Uncertainty around a metric: patient-level bootstrap intervals, subgroups, per-client spread.

Issue 31: bootstrap 95 % intervals over patients for pooled metrics; subgroup metrics over
declared sensitive attributes with the largest gap; per-client values and their spread. Each
function takes any metric ``metric_fn(y_true, y_pred)`` of :mod:`.metrics` or :mod:`.clinical`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from fedcare_core.objectives.metrics import MetricValue

#: A metric on (labels, predictions): a :class:`MetricValue`, a float, or ``None`` if undefined.
MetricFn = Callable[[np.ndarray, np.ndarray], MetricValue | float | None]
#: Subgroups smaller than this (rows the metric used) are reported but left out of the gap.
DEFAULT_SUBGROUP_MIN_N = 30


def _value(result: MetricValue | float | None) -> float | None:
    """The number in a metric's result; ``None`` (and NaN) for an undefined metric."""
    value = result.value if isinstance(result, MetricValue) else result
    return None if value is None or math.isnan(value) else float(value)


@dataclass(frozen=True)
class BootstrapInterval:
    """A percentile bootstrap interval over patients, and how many resamples defined it."""

    estimate: float | None
    low: float | None
    high: float | None
    level: float
    n_boot: int
    n_defined: int
    n_groups: int
    reason: str | None = None


def bootstrap_interval(
    metric_fn: MetricFn,
    y_true: np.ndarray,
    y_pred: np.ndarray,
    groups: np.ndarray,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> BootstrapInterval:
    """Percentile bootstrap interval of a pooled metric, resampling patients rather than rows.

    Each resample draws as many groups as there are, with replacement, and keeps every row of
    each group drawn (a patient's stays move together, so their correlation widens the interval
    as it should). A resample on which the metric is undefined — a single class for AUROC — is
    skipped, and the reason says how many were.

    Parameters
    ----------
    metric_fn : callable
        ``metric_fn(y_true, y_pred)``, e.g. :func:`.metrics.auroc` or :func:`brier`.
    y_true, y_pred : ndarray
        Labels and predictions of the pooled rows.
    groups : ndarray
        The patient (or other resampling unit) of each row; ``np.arange(n)`` resamples rows.
    n_boot : int
        Number of resamples.
    seed : int
        Seed of the generator: the interval is a deterministic function of the inputs.
    level : float
        Coverage of the interval, in (0, 1).

    Returns
    -------
    BootstrapInterval
        The metric on all rows, the interval's bounds and the count of defined resamples.
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    if n_boot < 1:
        raise ValueError(f"n_boot must be at least 1, got {n_boot}")
    y, p, g = (np.asarray(a).ravel() for a in (y_true, y_pred, groups))
    if not len(y) == len(p) == len(g):
        raise ValueError(f"lengths differ: {len(y)} labels, {len(p)} predictions, {len(g)} groups")
    _, inverse = np.unique(g, return_inverse=True)
    order = np.argsort(inverse, kind="stable")  # rows grouped, group by group
    counts = np.bincount(inverse)
    starts = np.cumsum(counts) - counts
    n_groups = len(counts)
    estimate = _value(metric_fn(y, p))
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(n_boot):
        drawn = rng.integers(0, n_groups, size=n_groups)
        lengths = counts[drawn]
        within = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        rows = order[np.repeat(starts[drawn], lengths) + within]
        value = _value(metric_fn(y[rows], p[rows]))
        if value is not None:
            values.append(value)
    skipped = n_boot - len(values)
    reason = (
        f"{skipped} of {n_boot} resamples left the metric undefined and were skipped"
        if skipped
        else None
    )
    if not values:
        return BootstrapInterval(estimate, None, None, level, n_boot, 0, n_groups, reason)
    low, high = np.quantile(values, [(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    return BootstrapInterval(
        estimate, float(low), float(high), level, n_boot, len(values), n_groups, reason
    )


@dataclass(frozen=True)
class SubgroupValue:
    """A metric on one subgroup; ``eligible`` when it counts towards the largest gap."""

    group: str
    value: float | None
    n: int
    eligible: bool
    reason: str | None = None


@dataclass(frozen=True)
class SubgroupReport:
    """Per-subgroup values and the largest gap (highest minus lowest) among eligible ones."""

    groups: tuple[SubgroupValue, ...]
    gap: float | None
    highest: str | None
    lowest: str | None
    min_n: int
    reason: str | None = None


def _is_missing(v: object) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def subgroup_metrics(
    metric_fn: MetricFn,
    y_true: np.ndarray,
    y_pred: np.ndarray,
    attribute: np.ndarray,
    *,
    min_n: int = DEFAULT_SUBGROUP_MIN_N,
    counted: Callable[[np.ndarray], int] | None = None,
) -> SubgroupReport:
    """A metric per value of a declared sensitive attribute, and the largest gap between them.

    A subgroup is eligible for the gap when the metric used at least ``min_n`` rows (30 by
    default; with ``counted``, ``counted(labels)`` of its rows' labels must reach it: an AUROC
    counts the rows of its smaller class) and is defined there; metrics needing both classes
    (AUROC, AUPRC, calibration) are undefined on a single class, so such a subgroup is
    excluded by its ``None``. Rows whose attribute is missing (``None`` or NaN) belong to no
    subgroup.

    Parameters
    ----------
    metric_fn : callable
        ``metric_fn(y_true, y_pred)``.
    y_true, y_pred : ndarray
        Labels and predictions.
    attribute : ndarray
        The attribute's value per row; subgroups are its distinct values (as strings, sorted).
    min_n : int
        Smallest subgroup, in rows, that counts towards the gap.
    counted : callable, optional
        What is compared with ``min_n`` instead of the rows the metric used.

    Returns
    -------
    SubgroupReport
        Every subgroup with its value, ``n`` and eligibility, and the gap with its two ends.
    """
    y, p = np.asarray(y_true).ravel(), np.asarray(y_pred).ravel()
    raw = np.asarray(attribute, dtype=object).ravel()
    if not len(y) == len(p) == len(raw):
        raise ValueError("labels, predictions and attribute differ in length")
    present = np.array([not _is_missing(v) for v in raw], dtype=bool)
    labels = np.array([str(v) for v in raw], dtype=object)
    values = []
    for key in sorted(set(labels[present].tolist())):
        rows = present & (labels == key)
        result = metric_fn(y[rows], p[rows])
        value = _value(result)
        n = result.n if isinstance(result, MetricValue) else int(rows.sum())
        reason = result.reason if isinstance(result, MetricValue) else None
        size = n if counted is None else counted(y[rows])
        if value is not None and size < min_n:
            reason = f"{size} {'rows' if counted is None else 'counted rows'}, fewer than {min_n}"
        eligible = value is not None and size >= min_n
        values.append(SubgroupValue(key, value, n, eligible, None if eligible else reason))
    ranked = sorted((s for s in values if s.eligible), key=lambda s: (s.value, s.group))
    if len(ranked) < 2:
        why = f"{len(ranked)} eligible subgroup(s) (>= {min_n} rows, metric defined); need 2"
        return SubgroupReport(tuple(values), None, None, None, min_n, why)
    low, high = ranked[0], ranked[-1]
    assert low.value is not None and high.value is not None  # eligible implies a value
    return SubgroupReport(tuple(values), high.value - low.value, high.group, low.group, min_n)


@dataclass(frozen=True)
class Spread:
    """Mean, sample standard deviation, min and max of per-client values.

    All ``None`` when no value is defined; ``std`` needs two values.
    """

    mean: float | None
    std: float | None
    min: float | None
    max: float | None
    n: int


def spread(values: Iterable[float | MetricValue | None]) -> Spread:
    """The spread of per-client metric values, skipping undefined ones (``None`` and NaN).

    Parameters
    ----------
    values : iterable
        One value per client: floats, ``None`` or :class:`MetricValue`.

    Returns
    -------
    Spread
        ``std`` is the sample standard deviation (``ddof=1``), ``None`` below two values.
    """
    kept = np.array([v for v in (_value(x) for x in values) if v is not None], dtype=np.float64)
    n = len(kept)
    if n == 0:
        return Spread(None, None, None, None, 0)
    std = float(kept.std(ddof=1)) if n >= 2 else None
    return Spread(float(kept.mean()), std, float(kept.min()), float(kept.max()), n)
