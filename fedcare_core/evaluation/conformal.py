"""Prediction intervals of length of stay by split conformal prediction (issue 31).

A client's length-of-stay head trains on ``log1p(days)`` (SPEC §2), so its errors are roughly
multiplicative in days. Its interval is fitted on the client's own validation rows, which the
model never trained on: the conformity score of a row is the absolute residual in log1p-days,
``|log1p(y) - log1p(ŷ)|``, and for nominal coverage ``1 - α`` the half-width ``q`` is the
``k``-th smallest of the ``n`` scores with ``k = ceil((n + 1)(1 - α))`` (the finite-sample
rule). A new prediction ``ŷ`` gets

    [expm1(max(0, log1p(ŷ) - q)), expm1(log1p(ŷ) + q)]

days: asymmetric around ``ŷ``, wider for longer predicted stays. When the validation and new
patients are exchangeable (the client's patients split at random), the interval holds the true
length of stay with probability at least ``1 - α``, and, without ties among the scores, at most
``1 - α + 1 / (n + 1)``. With ``k > n`` (fewer than ``(1 - α) / α`` rows: 9 for 90 %) no finite
interval has that guarantee, and none is given (:attr:`ConformalInterval.reason` says why).

Pure numpy: :class:`ConformalInterval` is a frozen value that round-trips through JSON, as the
binary objectives' :class:`~fedcare_core.evaluation.calibration.Calibrator` does.

References: V. Vovk, A. Gammerman and G. Shafer, *Algorithmic Learning in a Random World*,
2005; J. Lei, M. G'Sell, A. Rinaldo, R. Tibshirani and L. Wasserman, "Distribution-free
predictive inference for regression", JASA 2018; A. Angelopoulos and S. Bates, "Conformal
prediction: a gentle introduction", 2023.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "DEFAULT_COVERAGE",
    "METHOD",
    "ConformalInterval",
    "IntervalMetrics",
    "conformal_rank",
    "fit_conformal_interval",
    "interval_metrics",
    "min_rows",
]

#: Nominal coverage of a length-of-stay interval (a run setting may choose it later).
DEFAULT_COVERAGE = 0.9
#: The interval's method, as stored with it.
METHOD = "split_conformal_log1p"
#: Keeps e.g. ``(19 + 1) * 0.9 = 18.000000000000004`` from asking for the 19th score.
_RANK_TOL = 1e-9


def _check_coverage(coverage: float) -> None:
    if not 0.0 < coverage < 1.0:
        raise ValueError(f"coverage must lie strictly between 0 and 1, got {coverage}")


def conformal_rank(n: int, coverage: float) -> int:
    """The rank ``k = ceil((n + 1) * coverage)`` of the score that bounds ``n`` rows' interval.

    Parameters
    ----------
    n : int
        Calibration rows.
    coverage : float
        Nominal coverage ``1 - α``, in (0, 1).

    Returns
    -------
    int
        ``k``; above ``n`` means no finite interval has the coverage guarantee.
    """
    _check_coverage(coverage)
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    return max(1, math.ceil((n + 1) * coverage - _RANK_TOL))


def min_rows(coverage: float) -> int:
    """The fewest calibration rows for which :func:`conformal_rank` is at most ``n``."""
    n = max(1, math.floor(coverage / (1.0 - coverage)) - 1)
    while conformal_rank(n, coverage) > n:
        n += 1
    return n


def _percent(coverage: float) -> str:
    return f"{100 * coverage:g} %"


@dataclass(frozen=True)
class ConformalInterval:
    """A length-of-stay prediction interval: half-width ``quantile`` in log1p-days.

    ``coverage`` is the nominal coverage; ``n`` counts the validation rows it was fitted on;
    ``quantile`` is None when no interval could be fitted, and ``reason`` says how it was fitted
    or why not.
    """

    coverage: float
    quantile: float | None
    n: int
    reason: str = ""

    def __post_init__(self) -> None:
        _check_coverage(self.coverage)
        if self.quantile is not None and not (
            math.isfinite(self.quantile) and self.quantile >= 0.0
        ):
            raise ValueError(f"quantile must be finite and >= 0, got {self.quantile}")

    @property
    def available(self) -> bool:
        """Whether there is an interval (enough validation rows for the coverage)."""
        return self.quantile is not None

    def bounds(self, days: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The interval of each predicted length of stay, in days.

        Parameters
        ----------
        days : ndarray
            Predicted lengths of stay (days, at least 0).

        Returns
        -------
        tuple of ndarray
            Lower and upper ends (float64, shaped as ``days``); NaN where ``days`` is NaN, and
            everywhere when there is no interval.
        """
        d = np.asarray(days, dtype=np.float64)
        if self.quantile is None:
            nan = np.full(d.shape, np.nan)
            return nan, nan.copy()
        centre = np.log1p(np.maximum(d, 0.0))  # NaN stays NaN
        low = np.expm1(np.maximum(centre - self.quantile, 0.0))
        return low, np.expm1(centre + self.quantile)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (:meth:`from_dict` reads it back)."""
        return {
            "method": METHOD,
            "coverage": self.coverage,
            "quantile": self.quantile,
            "n": self.n,
            "reason": self.reason,
        }

    def summary(self) -> dict[str, Any]:
        """What ``results.json`` records: coverage, half-width, rows and reason."""
        return {
            "coverage": self.coverage,
            "quantile_log1p_days": self.quantile,
            "n_val": self.n,
            "reason": self.reason,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ConformalInterval:
        """Rebuild an interval written by :meth:`to_dict`.

        Raises
        ------
        ValueError
            If it was written by another method.
        """
        if data.get("method") != METHOD:
            raise ValueError(f"unknown interval method {data.get('method')!r}; expected {METHOD}")
        q = data.get("quantile")
        return cls(
            coverage=float(data["coverage"]),
            quantile=None if q is None else float(q),
            n=int(data["n"]),
            reason=str(data.get("reason", "")),
        )


def _lengths(values: np.ndarray, what: str) -> np.ndarray:
    out = np.asarray(values, dtype=np.float64).ravel()
    if np.any(out < 0.0):
        raise ValueError(f"{what} must be lengths of stay of at least 0 days")
    return out


def fit_conformal_interval(
    y_true: np.ndarray, y_pred: np.ndarray, coverage: float = DEFAULT_COVERAGE
) -> ConformalInterval:
    """The split-conformal interval of a length-of-stay model, from held-out rows.

    Parameters
    ----------
    y_true : ndarray
        True lengths of stay of the calibration (validation) rows, in days; missing values
        (NaN) are skipped.
    y_pred : ndarray
        The model's predictions for the same rows, in days.
    coverage : float
        Nominal coverage ``1 - α`` (0.9 by default).

    Returns
    -------
    ConformalInterval
        Its half-width is the ``ceil((n + 1) * coverage)``-th smallest absolute residual in
        log1p-days among the ``n`` rows with a label and a prediction; without enough rows
        (:func:`min_rows`) no interval, with the reason.

    Raises
    ------
    ValueError
        If the arrays differ in length, or hold a negative length of stay.
    """
    _check_coverage(coverage)
    y, p = _lengths(y_true, "labels"), _lengths(y_pred, "predictions")
    if y.shape != p.shape:
        raise ValueError(f"labels and predictions differ in length: {len(y)} vs {len(p)}")
    ok = np.isfinite(y) & np.isfinite(p)
    n = int(ok.sum())
    k = conformal_rank(n, coverage)
    if k > n:
        return ConformalInterval(
            coverage,
            None,
            n,
            f"{n} validation rows: {_percent(coverage)} coverage needs at least "
            f"{min_rows(coverage)} (ceil((n + 1) * {coverage:g}) <= n); no interval",
        )
    scores = np.sort(np.abs(np.log1p(y[ok]) - np.log1p(p[ok])))
    q = float(scores[k - 1])
    reason = (
        f"split conformal on {n} validation rows for {_percent(coverage)} coverage: q = {q:.4g}, "
        f"the absolute log1p residual of rank {k} of {n}"
    )
    return ConformalInterval(coverage, q, n, reason)


@dataclass(frozen=True)
class IntervalMetrics:
    """How intervals did on labelled rows: the share that held the truth, and their width.

    ``coverage`` and ``mean_width_days`` are None with a reason when no row had both a label
    and an interval.
    """

    coverage: float | None
    mean_width_days: float | None
    n: int
    reason: str | None = None


def interval_metrics(y_true: np.ndarray, low: np.ndarray, high: np.ndarray) -> IntervalMetrics:
    """Empirical coverage and mean width of prediction intervals.

    Parameters
    ----------
    y_true : ndarray
        True lengths of stay (days); missing values are skipped.
    low, high : ndarray
        Each row's interval (days); rows with a NaN end have no interval and are skipped.

    Returns
    -------
    IntervalMetrics
        The share of rows with ``low <= y <= high`` and the mean of ``high - low``.
    """
    y = np.asarray(y_true, dtype=np.float64).ravel()
    lo = np.asarray(low, dtype=np.float64).ravel()
    hi = np.asarray(high, dtype=np.float64).ravel()
    if not y.shape == lo.shape == hi.shape:
        raise ValueError(f"lengths differ: {len(y)} labels, {len(lo)} and {len(hi)} ends")
    ok = np.isfinite(y) & np.isfinite(lo) & np.isfinite(hi)
    n = int(ok.sum())
    if n == 0:
        return IntervalMetrics(None, None, 0, "no labelled row with an interval")
    inside = (lo[ok] <= y[ok]) & (y[ok] <= hi[ok])
    return IntervalMetrics(float(inside.mean()), float(np.mean(hi[ok] - lo[ok])), n)
