"""Numeric features scaled by statistics pooled across the clients, never their rows (issue 32).

By default each client standardises a numeric feature by its own training mean and standard
deviation (:func:`~fedcare_core.data.preprocess.fit_encoder`), so one raw value reaches the
shared backbone as different inputs at different clients, and a skewed count (visits, days)
stays skewed. ``data.scaling`` offers two pooled alternatives, each from a few numbers per
client and column:

- ``federated``: each client sends, per numeric column, its count of observed training values,
  their sum and their sum of squares (:func:`moment_summary`); the pooled mean and standard
  deviation (:func:`pooled_moments`) scale every client's values alike. A missing value is
  imputed with the pooled mean (0 once scaled); its indicator column says it was missing.
- ``federated-quantile``: each client then sends, per column, a histogram of its observed
  training values over :data:`BINS` bins spanning the pooled mean ± :data:`SPAN` standard
  deviations (values beyond fall in the end bins; :func:`histogram_summary`); the pooled
  histogram gives :data:`KNOTS` quantiles (:func:`pooled_knots`), and a value becomes the
  normal score of its pooled rank (:func:`quantile_scores`, ties split as scikit-learn's
  ``QuantileTransformer`` does). Missing values are imputed at the pooled median (score 0).

What leaves a client is in docs/PRIVACY.md: counts, sums and sums of squares per column, and
(``federated-quantile``) bin counts; a bin may hold a single patient's value. The statistics
are computed where the clients' data are prepared (a dataset's clients in one process); a
federation of sites would need a round of its own before Stage 1, and refuses these settings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import ndtri

from fedcare_core.config.limits import SCALINGS
from fedcare_core.data.partition import FeaturePartition

__all__ = [
    "BINS",
    "KNOTS",
    "SPAN",
    "PooledScale",
    "histogram_summary",
    "moment_summary",
    "pooled_knots",
    "pooled_moments",
    "pooled_scales",
    "pooled_statistics",
    "quantile_scores",
]

#: Histogram bins per column, and their span in pooled standard deviations around the mean.
BINS = 2000
SPAN = 8.0
#: Quantiles kept per column (the knots a value is ranked between).
KNOTS = 201
#: Ranks are clipped to ``[_EDGE, 1 − _EDGE]`` before their normal score (±3.09).
_EDGE = 1e-3
#: Standard deviations below this are treated as constant columns (scaled by 1).
_MIN_STD = 1e-8


@dataclass(frozen=True)
class PooledScale:
    """One numeric column's pooled statistics.

    ``center`` imputes a missing value and ``scale`` divides (``federated``); ``knots``: the
    pooled quantiles a value is ranked between (``federated-quantile``; None: moments only).
    """

    center: float
    scale: float
    knots: np.ndarray | None = None


def _observed(frame: pd.DataFrame, column: str) -> np.ndarray:
    values = frame[column].to_numpy(dtype=np.float64, na_value=np.nan)
    return values[np.isfinite(values)]


def moment_summary(frame: pd.DataFrame, columns: Sequence[str]) -> dict[str, np.ndarray]:
    """A client's message: per column, ``[count, sum, sum of squares]`` of its observed values."""
    out = {}
    for c in columns:
        x = _observed(frame, c)
        out[c] = np.array([len(x), x.sum(), (x * x).sum()], dtype=np.float64)
    return out


def pooled_moments(summaries: Sequence[Mapping[str, np.ndarray]]) -> dict[str, tuple[float, float]]:
    """The coordinator's step: each column's pooled mean and standard deviation.

    A column no client observed gets mean 0 and standard deviation 1.
    """
    totals: dict[str, np.ndarray] = {}
    for summary in summaries:
        for c, v in summary.items():
            totals[c] = totals.get(c, np.zeros(3)) + v
    out = {}
    for c, (n, s, ss) in totals.items():
        if n <= 0:
            out[c] = (0.0, 1.0)
            continue
        mean = s / n
        std = float(np.sqrt(max(ss / n - mean * mean, 0.0)))
        out[c] = (float(mean), std if std > _MIN_STD else 1.0)
    return out


def _edges(mean: float, std: float) -> np.ndarray:
    return np.linspace(mean - SPAN * std, mean + SPAN * std, BINS + 1)


def histogram_summary(
    frame: pd.DataFrame, moments: Mapping[str, tuple[float, float]]
) -> dict[str, np.ndarray]:
    """A client's second message: per column, its observed values' counts in the shared bins."""
    out = {}
    for c, (mean, std) in moments.items():
        edges = _edges(mean, std)
        x = np.clip(_observed(frame, c), edges[0], edges[-1])
        out[c] = np.histogram(x, bins=edges)[0].astype(np.float64)
    return out


def pooled_knots(counts: np.ndarray, mean: float, std: float) -> np.ndarray:
    """:data:`KNOTS` quantiles of a pooled histogram (linear within a bin).

    Returns the mean repeated where the histogram is empty.
    """
    total = counts.sum()
    if total <= 0:
        return np.full(KNOTS, mean)
    edges = _edges(mean, std)
    cdf = np.concatenate([[0.0], np.cumsum(counts) / total])
    probs = np.linspace(0.0, 1.0, KNOTS)
    # The inverse of the CDF that rises linearly across each occupied bin (empty bins skipped).
    occupied = counts > 0
    xs = np.column_stack([edges[:-1][occupied], edges[1:][occupied]]).ravel()
    cs = np.column_stack([cdf[:-1][occupied], cdf[1:][occupied]]).ravel()
    return np.interp(probs, cs, xs)


def pooled_scales(
    frames: Sequence[pd.DataFrame], held: Sequence[Sequence[str]], scaling: str
) -> dict[str, PooledScale]:
    """Every column's pooled scale from each client's training rows, by their messages only.

    Parameters
    ----------
    frames
        Each client's training rows (each is read by its own client's summaries only).
    held
        Per client, the numeric columns it encodes (it sends nothing for the others).
    scaling
        ``"federated"`` or ``"federated-quantile"``.
    """
    if scaling not in SCALINGS[1:]:
        raise ValueError(f"no pooled scaling {scaling!r}; choose from {SCALINGS[1:]}")
    moments = pooled_moments([moment_summary(f, cs) for f, cs in zip(frames, held, strict=True)])
    if scaling == "federated":
        return {c: PooledScale(m, s) for c, (m, s) in moments.items()}
    totals: dict[str, np.ndarray] = {}
    for f, cs in zip(frames, held, strict=True):
        for c, v in histogram_summary(f, {c: moments[c] for c in cs}).items():
            totals[c] = totals.get(c, np.zeros(BINS)) + v
    out = {}
    for c, (mean, std) in moments.items():
        knots = pooled_knots(totals[c], mean, std)
        out[c] = PooledScale(float(knots[KNOTS // 2]), std, knots)
    return out


def pooled_statistics(
    partition: FeaturePartition,
    numeric: frozenset[str],
    scaling: str,
    trains: Sequence[tuple[tuple[str, ...], pd.DataFrame]],
) -> dict[str, PooledScale]:
    """The pooled statistics of ``scaling`` for every numeric column the clients encode.

    Parameters
    ----------
    partition, numeric
        The clients' feature partition and the numeric features.
    scaling
        ``data.scaling`` (``"client"``: none, each client keeps its own).
    trains
        Each client's objectives and training rows.
    """
    if scaling == "client":
        return {}
    held = [
        [c for c in (*partition.common, *partition.private_for(objs)) if c in numeric]
        for objs, _ in trains
    ]
    return pooled_scales([frame for _, frame in trains], held, scaling)


def quantile_scores(x: np.ndarray, knots: np.ndarray) -> np.ndarray:
    """Normal scores of ``x``'s ranks among the pooled ``knots``.

    A value equal to several knots (a count's 0) gets the middle of their ranks: the mean of
    the interpolation upward and downward, as scikit-learn's ``QuantileTransformer``.
    """
    probs = np.linspace(0.0, 1.0, len(knots))
    up = np.interp(x, knots, probs)
    down = 1.0 - np.interp(-x, -knots[::-1], probs)
    rank = np.clip(0.5 * (up + down), _EDGE, 1.0 - _EDGE)
    return np.asarray(ndtri(rank), dtype=np.float64)
