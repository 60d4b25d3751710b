"""Calibration maps of a binary objective's scores, and their fits (issue 31).

A :class:`Calibrator` is a frozen value that maps a model's probability to a calibrated one and
round-trips through JSON (:meth:`Calibrator.to_dict`, :meth:`Calibrator.from_dict`): a logistic
map on the logit (Platt's form, which also carries the undoing of a class weight and an
intercept-only update), an isotonic step function, or the identity. Which map a client deploys
is chosen by :mod:`fedcare_core.evaluation.recalibration`.

References: J. Platt, "Probabilistic outputs for support vector machines", 1999 (the smoothed
targets); A. Niculescu-Mizil and R. Caruana, "Predicting good probabilities with supervised
learning", ICML 2005.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

METHODS = ("identity", "platt", "isotonic")
#: The updating steps a calibrator can stand for (:attr:`Calibrator.update`).
UPDATES = ("none", "reweighting", "intercept", "logistic", "isotonic")
#: Scores are clipped to [eps, 1 - eps] before the logit, so 0 and 1 map to finite values.
SCORE_EPS = 1e-9
#: Calibrated outputs are clipped to [eps, 1 - eps]: a calibrated risk is never exactly 0 or 1.
PROB_EPS = 1e-12
#: Ridge on the logistic coefficients: keeps Newton's step finite on separable data.
RIDGE = 1e-6
NEWTON_MAX_ITERS = 100
NEWTON_TOL = 1e-10


def logit(p: np.ndarray, eps: float = SCORE_EPS) -> np.ndarray:
    """Log-odds of probabilities clipped to ``[eps, 1 - eps]`` (NaN kept)."""
    q = np.clip(np.asarray(p, dtype=np.float64), eps, 1.0 - eps)
    return np.log(q) - np.log1p(-q)


def sigmoid(z: np.ndarray) -> np.ndarray:
    """Logistic function, overflow-free for large ``|z|``."""
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(-np.abs(z))
    return np.where(z >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _log_loss(f: np.ndarray, t: np.ndarray) -> float:
    """Summed cross-entropy of targets ``t`` against logits ``f`` (stable form)."""
    return float(np.sum(np.logaddexp(0.0, f) - t * f))


def log_likelihood(y: np.ndarray, z: np.ndarray) -> float:
    """Bernoulli log-likelihood of labels ``y`` under logits ``z``."""
    return float(np.sum(y * z - np.logaddexp(0.0, z)))


def lr_p_value(larger: float, smaller: float, df: int) -> float:
    """The likelihood-ratio test's p-value of nested fits' log-likelihoods (``df`` degrees)."""
    from scipy.stats import chi2

    return float(chi2.sf(max(2.0 * (larger - smaller), 0.0), df))


def fit_intercept(y: np.ndarray, offset: np.ndarray) -> float:
    """The intercept ``b`` maximising the likelihood of ``y`` under ``offset + b``."""
    (b,) = fit_logistic(np.ones((len(y), 1)), y, offset=offset)
    return float(b)


def fit_logistic(
    features: np.ndarray,
    targets: np.ndarray,
    *,
    offset: np.ndarray | None = None,
    ridge: float = RIDGE,
) -> np.ndarray:
    """Logistic regression by damped Newton (IRLS) with a tiny ridge.

    Parameters
    ----------
    features : ndarray, shape (n, k)
        Design matrix (include a column of ones for an intercept).
    targets : ndarray, shape (n,)
        Targets in [0, 1] (labels or smoothed labels).
    offset : ndarray, shape (n,), optional
        A fixed term added to the linear predictor (e.g. a logit with slope fixed at 1).
    ridge : float
        Penalty ``ridge / 2 * ||w||^2``; tiny, so the fit is the MLE wherever one exists.

    Returns
    -------
    ndarray, shape (k,)
        The coefficients. Deterministic: a fixed start (zeros) and a bounded iteration count.
    """
    x = np.asarray(features, dtype=np.float64)
    t = np.asarray(targets, dtype=np.float64)
    off = np.zeros(len(t)) if offset is None else np.asarray(offset, dtype=np.float64)
    w = np.zeros(x.shape[1])

    def objective(v: np.ndarray) -> float:
        return _log_loss(x @ v + off, t) + 0.5 * ridge * float(v @ v)

    current = objective(w)
    for _ in range(NEWTON_MAX_ITERS):
        p = sigmoid(x @ w + off)
        grad = x.T @ (p - t) + ridge * w
        hess = (x * (p * (1.0 - p))[:, None]).T @ x + ridge * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        scale = 1.0
        while True:  # backtracking: Newton overshoots when the data are nearly separable
            candidate = w - scale * step
            value = objective(candidate)
            if value <= current or scale < 1e-8:
                break
            scale *= 0.5
        w, moved, current = candidate, scale * float(np.abs(step).max()), value
        if moved < NEWTON_TOL:
            break
    return w


@dataclass(frozen=True)
class Calibrator:
    """A fitted calibration map from raw scores to probabilities.

    ``method`` is ``"platt"`` (``p = sigmoid(a * logit(s) + b)``), ``"isotonic"`` (piecewise
    linear through ``(x, y)``, clipped to ``[x[0], x[-1]]``) or ``"identity"``. ``reason`` says
    why the method was chosen; ``n_pos`` and ``n_neg`` count the rows it was fitted on.
    """

    method: str
    a: float = 1.0
    b: float = 0.0
    x: tuple[float, ...] = ()
    y: tuple[float, ...] = ()
    n_pos: int = 0
    n_neg: int = 0
    reason: str = ""
    #: The updating step it stands for (:data:`UPDATES`): none, reweighting (a class weight
    #: undone), intercept, logistic or isotonic.
    update: str = "none"

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"Calibrator.method must be one of {METHODS}, got {self.method!r}")
        if self.update not in UPDATES:
            raise ValueError(f"Calibrator.update must be one of {UPDATES}, got {self.update!r}")
        if self.method == "isotonic":
            x, y = np.asarray(self.x), np.asarray(self.y)
            if len(x) == 0 or len(x) != len(y):
                raise ValueError("Calibrator.x and .y must be non-empty and of equal length")
            if np.any(np.diff(x) <= 0) or np.any(np.diff(y) < 0):
                raise ValueError("Calibrator.x must increase strictly and .y must not decrease")

    def apply(self, scores: np.ndarray) -> np.ndarray:
        """Calibrated probabilities (float64, NaN preserved).

        Parameters
        ----------
        scores : ndarray
            Raw scores of the binary objective, probabilities in [0, 1].

        Returns
        -------
        ndarray
            Same shape as ``scores``; Platt's and isotonic outputs lie strictly inside (0, 1).
        """
        s = np.asarray(scores, dtype=np.float64)
        if self.method == "identity":
            return s.copy()
        out = np.full(s.shape, np.nan)
        ok = ~np.isnan(s)
        if self.method == "platt":
            p = sigmoid(self.a * logit(s[ok]) + self.b)
            out[ok] = np.clip(p, PROB_EPS, 1.0 - PROB_EPS)
        else:
            x = np.asarray(self.x)
            p = np.interp(np.clip(s[ok], x[0], x[-1]), x, np.asarray(self.y))
            out[ok] = np.clip(p, PROB_EPS, 1.0 - PROB_EPS)
        return out

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict (plain floats, ints, lists and strings)."""
        return {
            "method": self.method,
            "a": float(self.a),
            "b": float(self.b),
            "x": [float(v) for v in self.x],
            "y": [float(v) for v in self.y],
            "n_pos": int(self.n_pos),
            "n_neg": int(self.n_neg),
            "reason": self.reason,
            "update": self.update,
        }

    def summary(self) -> dict[str, Any]:
        """What a report shows: method, reason, counts, Platt's ``a`` and ``b`` or step count."""
        out: dict[str, Any] = {
            "update": self.update,
            "method": self.method,
            "n_pos": self.n_pos,
            "n_neg": self.n_neg,
        }
        if self.method == "platt":
            out |= {"a": float(self.a), "b": float(self.b)}
        elif self.method == "isotonic":
            out["points"] = len(self.x)
        return out | {"reason": self.reason}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Calibrator:
        """The calibrator :meth:`to_dict` wrote; unknown keys raise ``ValueError``."""
        unknown = set(data) - {"method", "a", "b", "x", "y", "n_pos", "n_neg", "reason", "update"}
        if unknown:
            raise ValueError(f"unknown Calibrator fields: {sorted(unknown)}")
        return cls(
            method=str(data["method"]),
            a=float(data.get("a", 1.0)),
            b=float(data.get("b", 0.0)),
            x=tuple(float(v) for v in data.get("x", ())),
            y=tuple(float(v) for v in data.get("y", ())),
            n_pos=int(data.get("n_pos", 0)),
            n_neg=int(data.get("n_neg", 0)),
            reason=str(data.get("reason", "")),
            update=str(data.get("update", "none")),
        )


def _platt_targets(y_true: np.ndarray) -> np.ndarray:
    """Platt's smoothed targets: ``(n+ + 1) / (n+ + 2)`` for positives, ``1 / (n- + 2)`` else."""
    pos = np.asarray(y_true, dtype=np.float64) > 0.5
    n_pos = int(pos.sum())
    n_neg = len(pos) - n_pos
    return np.where(pos, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))


def fit_platt(y_true: np.ndarray, scores: np.ndarray) -> tuple[float, float]:
    """Platt's ``(a, b)`` for ``p = sigmoid(a * logit(s) + b)``.

    Fitted by Newton on Platt's smoothed targets, ``(n+ + 1) / (n+ + 2)`` for positives and
    ``1 / (n- + 2)`` for negatives, which keep the fit finite on separable rows.

    Parameters
    ----------
    y_true : ndarray
        Labels 0/1 (no missing value).
    scores : ndarray
        Scores in [0, 1] (no missing value).

    Returns
    -------
    tuple of float
        The slope ``a`` and intercept ``b`` on the logit scale.
    """
    targets = _platt_targets(y_true)
    z = logit(scores)
    a, b = fit_logistic(np.column_stack([z, np.ones_like(z)]), targets)
    return float(a), float(b)


def fit_isotonic(y_true: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Isotonic (non-decreasing) regression of the labels on the scores.

    Tied scores are pooled first (their mean label, weighted by their count); the inner points of
    each constant run are dropped, so the thresholds are as few as the fit allows.

    Parameters
    ----------
    y_true : ndarray
        Labels 0/1 (no missing value).
    scores : ndarray
        Scores (no missing value).

    Returns
    -------
    tuple of ndarray
        Thresholds ``x`` (strictly increasing) and fitted values ``y`` (non-decreasing).
    """
    from scipy.optimize import isotonic_regression

    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(y_true, dtype=np.float64)
    x, inverse, counts = np.unique(s, return_inverse=True, return_counts=True)
    means = np.bincount(inverse, weights=y) / counts
    fitted = isotonic_regression(means, weights=counts.astype(np.float64)).x
    keep = np.ones(len(x), dtype=bool)
    keep[1:-1] = (fitted[1:-1] != fitted[:-2]) | (fitted[1:-1] != fitted[2:])
    return x[keep], np.asarray(fitted[keep], dtype=np.float64)
