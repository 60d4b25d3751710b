"""The objective kinds' main metrics: AUROC for binary objectives, MAE for a quantity."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class MetricValue:
    """A metric value, or ``None`` with the reason it cannot be computed."""

    value: float | None
    n: int
    reason: str | None = None


def auroc(y_true: np.ndarray, y_score: np.ndarray) -> MetricValue:
    """Area under the ROC curve (Mann–Whitney form, ties counted half).

    Returns ``None`` with a reason when the labels hold a single class.
    """
    # Imported here: scipy.stats takes ~1 s to import, which scoring raw rows
    # (``fedcare predict``) and preparing a site never need.
    from scipy.stats import rankdata

    y = np.asarray(y_true, dtype=np.float64)
    s = np.asarray(y_score, dtype=np.float64)
    mask = np.isfinite(y)
    pos, s = y[mask] > 0.5, s[mask]
    n_pos = int(pos.sum())
    n_neg = len(pos) - n_pos
    if n_pos == 0 or n_neg == 0:
        which = "positive" if n_pos == 0 else "negative"
        return MetricValue(None, len(pos), f"no {which} label among {len(pos)} test rows")
    ranks = rankdata(s)
    value = (ranks[pos].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg)
    return MetricValue(float(value), len(pos))


def mae(y_true: np.ndarray, y_pred: np.ndarray) -> MetricValue:
    """Mean absolute error (same unit as the inputs: days for LOS)."""
    y = np.asarray(y_true, dtype=np.float64)
    p = np.asarray(y_pred, dtype=np.float64)
    mask = np.isfinite(y)
    if not mask.any():
        return MetricValue(None, 0, "no labelled test row")
    return MetricValue(float(np.abs(y[mask] - p[mask]).mean()), int(mask.sum()))
