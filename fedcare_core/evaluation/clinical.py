"""Clinical metrics of issue 31: discrimination, calibration, operating points, LOS error by band.

Binary metrics take labels 0/1 and predicted risks in [0, 1]; rows with a missing label or a
missing score are skipped (``n`` counts the rows used). Like :func:`.metrics.auroc`, a metric
that is undefined on the rows given is ``None`` with a reason, never an exception. The
uncertainty around them — patient-level bootstrap intervals, subgroup values with their largest
gap, the spread of per-client values — is in :mod:`.uncertainty`, re-exported here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fedcare_core.evaluation.calibration import fit_logistic, logit
from fedcare_core.evaluation.uncertainty import (
    BootstrapInterval,
    Spread,
    SubgroupReport,
    SubgroupValue,
    bootstrap_interval,
    spread,
    subgroup_metrics,
)
from fedcare_core.objectives import objective_kind
from fedcare_core.objectives.metrics import MetricValue

__all__ = [
    "DEFAULT_ECE_BINS",
    "DEFAULT_LOS_BANDS",
    "BandError",
    "BootstrapInterval",
    "CalibrationFit",
    "Confusion",
    "Spread",
    "SubgroupReport",
    "SubgroupValue",
    "auprc",
    "bootstrap_interval",
    "brier",
    "brier_reference",
    "calibration_slope_intercept",
    "clinical_summary",
    "confusion_at",
    "ece",
    "mae_bias_by_band",
    "spread",
    "subgroup_metrics",
    "threshold_for_sensitivity",
]

#: Length-of-stay bands in days, ``low <= y < high``: short, medium and long stays.
DEFAULT_LOS_BANDS: tuple[tuple[float, float], ...] = ((0.0, 3.0), (3.0, 7.0), (7.0, math.inf))
#: Equal-width bins of :func:`ece`.
DEFAULT_ECE_BINS = 10


def _rows(y_true: np.ndarray, y_score: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows with a label and a finite score, as float64."""
    y = np.asarray(y_true, dtype=np.float64).ravel()
    s = np.asarray(y_score, dtype=np.float64).ravel()
    if y.shape != s.shape:
        raise ValueError(f"labels and scores differ in length: {len(y)} vs {len(s)}")
    ok = np.isfinite(y) & np.isfinite(s)
    return y[ok], s[ok]


def _binary_rows(y_true: np.ndarray, y_prob: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_rows` for labels 0/1 and probabilities, which must lie in [0, 1]."""
    y, p = _rows(y_true, y_prob)
    if np.any((p < 0.0) | (p > 1.0)):
        raise ValueError("predicted risks must be probabilities in [0, 1]")
    return (y > 0.5).astype(np.float64), p


def _single_class(y: np.ndarray) -> str | None:
    """The reason a metric needing both classes is undefined on labels ``y``, if it is."""
    n_pos = int(y.sum())
    if n_pos == 0 or n_pos == len(y):
        which = "positive" if n_pos == 0 else "negative"
        return f"no {which} label among {len(y)} rows"
    return None


def auprc(y_true: np.ndarray, y_score: np.ndarray) -> MetricValue:
    """Area under the precision–recall curve as average precision.

    Step-wise, as :func:`sklearn.metrics.average_precision_score`: ``sum_k (R_k - R_{k-1}) P_k``
    over the distinct score thresholds, high to low (no interpolation). ``None`` when the rows
    hold a single class (with only positives it would be trivially 1).

    Parameters
    ----------
    y_true : ndarray
        Labels 0/1.
    y_score : ndarray
        Scores; higher means more likely positive.

    Returns
    -------
    MetricValue
        The average precision; its base-rate reference is the positive fraction.
    """
    y, s = _rows(y_true, y_score)
    y = (y > 0.5).astype(np.float64)
    reason = _single_class(y)
    if reason is not None:
        return MetricValue(None, len(y), reason)
    order = np.argsort(-s, kind="mergesort")
    s, y = s[order], y[order]
    last = np.r_[np.flatnonzero(np.diff(s) != 0), len(s) - 1]  # last row of each threshold
    tps = np.cumsum(y)[last]
    precision = tps / (last + 1.0)
    recall = tps / tps[-1]
    value = float(np.sum(np.diff(np.r_[0.0, recall]) * precision))
    return MetricValue(value, len(y))


def brier(y_true: np.ndarray, y_prob: np.ndarray) -> MetricValue:
    """Brier score: the mean squared difference between the risk and the label."""
    y, p = _binary_rows(y_true, y_prob)
    if len(y) == 0:
        return MetricValue(None, 0, "no labelled row")
    return MetricValue(float(np.mean((p - y) ** 2)), len(y))


def brier_reference(y_true: np.ndarray, y_prob: np.ndarray) -> MetricValue:
    """Brier score of predicting the base rate ``p̄`` for everyone: ``p̄ (1 - p̄)``.

    Computed on the same rows as :func:`brier` (those with a label and a risk), so a model's
    Brier score below this reference means it beats the uninformative constant risk.
    """
    y, _ = _binary_rows(y_true, y_prob)
    if len(y) == 0:
        return MetricValue(None, 0, "no labelled row")
    rate = float(y.mean())
    return MetricValue(rate * (1.0 - rate), len(y))


@dataclass(frozen=True)
class CalibrationFit:
    """Logistic recalibration of the labels on ``logit(p)``.

    ``slope`` and ``intercept`` are the joint fit of ``logit P(y=1) = intercept + slope *
    logit(p)``; ``intercept_in_the_large`` is the intercept with the slope fixed at 1 (logit(p)
    as an offset). A well-calibrated model has slope 1 and both intercepts 0; a slope below 1
    means overconfident risks.
    """

    slope: float | None
    intercept: float | None
    intercept_in_the_large: float | None
    n: int
    reason: str | None = None


def calibration_slope_intercept(y_true: np.ndarray, y_prob: np.ndarray) -> CalibrationFit:
    """Calibration slope and intercept (Cox 1958; Van Calster et al. 2019's weak calibration).

    Parameters
    ----------
    y_true : ndarray
        Labels 0/1.
    y_prob : ndarray
        Predicted risks in [0, 1], clipped to ``[1e-9, 1 - 1e-9]`` before the logit.

    Returns
    -------
    CalibrationFit
        ``None`` values with a reason when the rows hold a single class.
    """
    y, p = _binary_rows(y_true, y_prob)
    reason = _single_class(y) if len(y) else "no labelled row"
    if reason is not None:
        return CalibrationFit(None, None, None, len(y), reason)
    z = logit(p)
    ones = np.ones_like(z)
    slope, intercept = fit_logistic(np.column_stack([z, ones]), y)
    (in_the_large,) = fit_logistic(ones[:, None], y, offset=z)
    return CalibrationFit(float(slope), float(intercept), float(in_the_large), len(y))


def ece(y_true: np.ndarray, y_prob: np.ndarray, n_bins: int = DEFAULT_ECE_BINS) -> MetricValue:
    """Expected calibration error over equal-width risk bins.

    ``sum_b (n_b / n) |mean(y_b) - mean(p_b)|`` over ``n_bins`` bins of [0, 1] (10 by default),
    closed on the right and the first one also on the left — ``[0, .1], (.1, .2], ..., (.9, 1]``
    — as :func:`sklearn.calibration.calibration_curve` bins; empty bins weigh nothing.

    Parameters
    ----------
    y_true : ndarray
        Labels 0/1.
    y_prob : ndarray
        Predicted risks in [0, 1].
    n_bins : int
        Number of equal-width bins.

    Returns
    -------
    MetricValue
        The ECE, in units of probability.
    """
    if n_bins < 1:
        raise ValueError(f"n_bins must be at least 1, got {n_bins}")
    y, p = _binary_rows(y_true, y_prob)
    if len(y) == 0:
        return MetricValue(None, 0, "no labelled row")
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    bins = np.searchsorted(edges[1:-1], p, side="left")
    observed = np.bincount(bins, weights=y, minlength=n_bins)
    predicted = np.bincount(bins, weights=p, minlength=n_bins)
    gap = np.abs(observed - predicted)  # per bin: n_b |mean(y_b) - mean(p_b)|
    return MetricValue(float(gap.sum() / len(y)), len(y))


def threshold_for_sensitivity(
    y_true: np.ndarray, y_prob: np.ndarray, target: float = 0.8
) -> MetricValue:
    """The highest threshold whose sensitivity on these rows reaches ``target``.

    A row is predicted positive when its risk is at or above the threshold, so the threshold is
    the ``ceil(target * n_pos)``-th highest risk among the positives. Choose it on a client's
    validation rows and report :func:`confusion_at` on its test rows.

    Parameters
    ----------
    y_true : ndarray
        Labels 0/1.
    y_prob : ndarray
        Predicted risks.
    target : float
        Target sensitivity in (0, 1].

    Returns
    -------
    MetricValue
        The threshold; ``None`` with a reason when there is no positive row.
    """
    if not 0.0 < target <= 1.0:
        raise ValueError(f"target sensitivity must lie in (0, 1], got {target}")
    y, p = _rows(y_true, y_prob)
    positives = np.sort(p[y > 0.5])[::-1]
    if len(positives) == 0:
        return MetricValue(None, len(y), f"no positive label among {len(y)} rows")
    # The small tolerance keeps e.g. 0.7 * 10 = 7.000000000000001 from asking for 8 positives.
    k = max(1, math.ceil(target * len(positives) - 1e-9))
    return MetricValue(float(positives[k - 1]), len(y))


@dataclass(frozen=True)
class Confusion:
    """Counts and rates at a threshold (predicted positive when ``risk >= threshold``).

    A rate is ``None`` when its denominator is zero.
    """

    threshold: float
    tp: int
    fp: int
    tn: int
    fn: int
    sensitivity: float | None
    specificity: float | None
    ppv: float | None
    npv: float | None

    @property
    def n(self) -> int:
        """Rows counted."""
        return self.tp + self.fp + self.tn + self.fn


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def confusion_at(y_true: np.ndarray, y_prob: np.ndarray, threshold: float) -> Confusion:
    """Sensitivity, specificity, PPV and NPV with their counts at ``threshold``.

    Parameters
    ----------
    y_true : ndarray
        Labels 0/1.
    y_prob : ndarray
        Predicted risks (or any score on the threshold's scale).
    threshold : float
        Rows with a risk at or above it are predicted positive.

    Returns
    -------
    Confusion
        The four counts and four rates.
    """
    y, p = _rows(y_true, y_prob)
    actual, predicted = y > 0.5, p >= threshold
    tp = int(np.sum(actual & predicted))
    fp = int(np.sum(~actual & predicted))
    tn = int(np.sum(~actual & ~predicted))
    fn = int(np.sum(actual & ~predicted))
    return confusion_of_counts(float(threshold), tp, fp, tn, fn)


def confusion_of_counts(threshold: float, tp: int, fp: int, tn: int, fn: int) -> Confusion:
    """The :class:`Confusion` of four counts (e.g. summed over clients, each at its threshold).

    Parameters
    ----------
    threshold : float
        The threshold the counts were taken at (NaN: several).
    tp, fp, tn, fn : int
        True and false positives, true and false negatives.

    Returns
    -------
    Confusion
        The counts and their four rates.
    """
    return Confusion(
        threshold=threshold,
        tp=tp,
        fp=fp,
        tn=tn,
        fn=fn,
        sensitivity=_ratio(tp, tp + fn),
        specificity=_ratio(tn, tn + fp),
        ppv=_ratio(tp, tp + fp),
        npv=_ratio(tn, tn + fn),
    )


@dataclass(frozen=True)
class BandError:
    """Error of a regression objective on the rows whose true value lies in ``[low, high)``.

    ``bias`` is the mean signed error ``pred - true`` (positive: over-predicts); ``mae`` and
    ``bias`` are ``None`` for an empty band.
    """

    low: float
    high: float
    n: int
    mae: float | None
    bias: float | None


def mae_bias_by_band(
    y_true: np.ndarray,
    y_pred: np.ndarray,
    bands: tuple[tuple[float, float], ...] = DEFAULT_LOS_BANDS,
) -> tuple[BandError, ...]:
    """MAE and bias of length-of-stay predictions per band of the true length.

    Parameters
    ----------
    y_true : ndarray
        True lengths of stay (days); missing values are skipped.
    y_pred : ndarray
        Predicted lengths of stay (days).
    bands : tuple of (low, high)
        Bands ``low <= y_true < high``; by default under 3 days, 3 to 7 days, 7 days and more.

    Returns
    -------
    tuple of BandError
        One per band, in the order given.
    """
    y, pred = _rows(y_true, y_pred)
    out = []
    for low, high in bands:
        if not low < high:
            raise ValueError(f"a band needs low < high, got ({low}, {high})")
        inside = (y >= low) & (y < high)
        err = pred[inside] - y[inside]
        n = int(inside.sum())
        mae = float(np.abs(err).mean()) if n else None
        bias = float(err.mean()) if n else None
        out.append(BandError(float(low), float(high), n, mae, bias))
    return tuple(out)


def clinical_summary(kind: str, y_true: np.ndarray, y_pred: np.ndarray) -> dict[str, float | None]:
    """The clinical metrics of one objective's predictions, by name (None: undefined).

    Parameters
    ----------
    kind
        The objective's kind: a risk's ``y_pred`` are probabilities, another's a quantity
        (days).
    y_true, y_pred
        Labels and predictions (rows with a missing label are skipped).

    Returns
    -------
    dict
        Binary: ``auprc``, ``brier``, ``brier_reference`` (the base rate's), ``ece``,
        ``calibration_slope``, ``calibration_intercept``, ``mean_risk`` and ``observed_rate``.
        Regression: ``bias_days`` (mean of prediction minus truth) and, per length band,
        ``mae_days_<low>-<high>`` and ``bias_days_<low>-<high>``. A value that is not finite
        is None (the document is JSON; a run compares equal with its resumed twin).
    """
    return {k: _finite(v) for k, v in _summary(kind, y_true, y_pred).items()}


def _finite(value: float | None) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)


def _summary(kind: str, y_true: np.ndarray, y_pred: np.ndarray) -> dict[str, float | None]:
    if not objective_kind(kind).risk:
        y, p = _rows(y_true, y_pred)
        out: dict[str, float | None] = {"bias_days": float(np.mean(p - y)) if len(y) else None}
        for band in mae_bias_by_band(y, p):
            name = f"{band.low:g}-{band.high:g}"
            out[f"mae_days_{name}"] = band.mae
            out[f"bias_days_{name}"] = band.bias
        return out
    y, p = _binary_rows(y_true, y_pred)
    fit = calibration_slope_intercept(y, p)
    return {
        "auprc": auprc(y, p).value,
        "brier": brier(y, p).value,
        "brier_reference": brier_reference(y, p).value,
        "ece": ece(y, p).value,
        "calibration_slope": fit.slope,
        "calibration_intercept": fit.intercept,
        "mean_risk": float(np.mean(p)) if len(p) else None,
        "observed_rate": float(np.mean(y)) if len(y) else None,
    }
