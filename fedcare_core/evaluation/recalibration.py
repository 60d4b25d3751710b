"""Which calibration a client's model gets: the documented rule (issue 31).

Binary heads train on a weighted cross-entropy (positive weight ``w = negatives / positives`` of
the client's training labels, SPEC §2). Weighting the positives by ``w`` moves the minimiser of
the loss from the true log-odds to the log-odds plus ``log w``, so the network's risks are
inflated (a 0.47 mean risk for an 11 % readmission rate) while its ranking is untouched. The
rule, :func:`fit_calibrator` with ``method="auto"``:

1. **Undo the weighting**: shift the logit by ``-log w``. This is exact for the weighted loss's
   minimiser (the prior correction of King & Zeng, 2001), costs no validation row and keeps the
   ranking.
2. **Test the client's validation rows for what is left**, by the closed testing procedure of
   Vergouwe et al. (2017): a likelihood-ratio test of the logistic recalibration
   ``sigmoid(a z + b)`` against the reweighted model (2 df, level ``alpha`` = 0.05). Not
   significant: keep the reweighted model. Significant: test it against an intercept-only update
   ``sigmoid(z + b)`` (1 df); not significant: update the intercept, else the slope and
   intercept. A small site's noise thus changes nothing, and a real miscalibration (a site whose
   rate differs from the model's) is corrected. A fitted slope that is not positive is never
   used (the intercept is updated instead): calibration never reverses a model's ranking.
3. **A slope needs rows**: with fewer than ``slope_min_per_class`` (100) validation rows of
   either class, only the intercept is tested (1 df against the reweighted model). A slope
   fitted on a few dozen events is mostly noise (Vergouwe et al., 2005, ask for 100 events and
   100 non-events to assess calibration). At K = 30 on Diabetes 130 a site's validation rows
   hold about 40 readmissions: its readmission risks may get an intercept update, not a slope.
4. With fewer than ``min_per_class`` (10) validation rows of either class nothing is tested:
   the reweighted model is kept, and its reason says so.

``method`` may force ``"platt"`` (logistic recalibration, Platt's smoothed targets),
``"isotonic"`` (a step function; needs many rows) or ``"identity"`` (the network's own
probabilities, as before issue 31).

References: G. King and L. Zeng, "Logistic regression in rare events data", Political Analysis,
2001; Y. Vergouwe, E. W. Steyerberg, M. J. C. Eijkemans and J. D. F. Habbema, "Substantial
effective sample sizes were required for external validation studies of predictive logistic
regression models", Journal of Clinical Epidemiology, 2005; Y. Vergouwe, D. Nieboer,
R. Oostenbrink et al., "A closed testing procedure to select an appropriate method for updating
prediction models", Statistics in Medicine, 2017.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedcare_core.evaluation.calibration import (
    METHODS,
    Calibrator,
    fit_intercept,
    fit_isotonic,
    fit_logistic,
    fit_platt,
    log_likelihood,
    logit,
    lr_p_value,
)

__all__ = ["DEFAULT_RULE", "CalibrationRule", "fit_calibrator"]


@dataclass(frozen=True)
class CalibrationRule:
    """How :func:`fit_calibrator` chooses its map (see the module docstring).

    ``method`` is ``"auto"`` (the rule) or a forced ``"platt"``, ``"isotonic"`` or
    ``"identity"``; a forced Platt or isotonic keeps the reweighted model below
    ``min_per_class``. ``alpha`` is the level of the closed test's likelihood-ratio tests;
    below ``slope_min_per_class`` rows of a class only the intercept is tested.
    """

    method: str = "auto"
    min_per_class: int = 10
    slope_min_per_class: int = 100
    alpha: float = 0.05

    def __post_init__(self) -> None:
        if self.method not in ("auto", *METHODS):
            raise ValueError(f"CalibrationRule.method must be 'auto' or one of {METHODS}")
        if not 1 <= self.min_per_class <= self.slope_min_per_class:
            raise ValueError("need 1 <= CalibrationRule.min_per_class <= slope_min_per_class")
        if not 0.0 < self.alpha < 1.0:
            raise ValueError("CalibrationRule.alpha must lie in (0, 1)")


DEFAULT_RULE = CalibrationRule()


def _closed_test(
    y: np.ndarray, z: np.ndarray, alpha: float, *, slope: bool
) -> tuple[str, float, float, str]:
    """Vergouwe et al.'s choice among keeping ``z``, an intercept update and a logistic one.

    ``slope``: whether the logistic update may be chosen (else only the intercept is tested).

    Returns
    -------
    tuple
        ``(update, a, b, why)``: the map ``sigmoid(a z + b)`` and the tests' p-values.
    """
    b1 = fit_intercept(y, z)
    kept, shifted = log_likelihood(y, z), log_likelihood(y, z + b1)
    if not slope:
        p_shift = lr_p_value(shifted, kept, 1)
        if p_shift >= alpha:
            return "reweighting", 1.0, 0.0, f"no miscalibration in the large (p = {p_shift:.3g})"
        return "intercept", 1.0, float(b1), f"miscalibrated in the large (p = {p_shift:.3g})"
    a2, b2 = fit_logistic(np.column_stack([z, np.ones_like(z)]), y)
    logistic = log_likelihood(y, a2 * z + b2)
    p_any = lr_p_value(logistic, kept, 2)
    if p_any >= alpha:
        return "reweighting", 1.0, 0.0, f"no miscalibration left (p = {p_any:.3g})"
    p_slope = lr_p_value(logistic, shifted, 1)
    if p_slope >= alpha or a2 <= 0.0:
        why = f"miscalibrated (p = {p_any:.3g}), in the intercept only (p = {p_slope:.3g})"
        return "intercept", 1.0, float(b1), why
    why = f"miscalibrated (p = {p_any:.3g}), in the slope too (p = {p_slope:.3g})"
    return "logistic", float(a2), float(b2), why


def fit_calibrator(
    y_true: np.ndarray,
    scores: np.ndarray,
    *,
    pos_weight: float = 1.0,
    rule: CalibrationRule = DEFAULT_RULE,
) -> Calibrator:
    """The calibrator of a client's binary objective, fitted on its validation rows.

    Parameters
    ----------
    y_true : ndarray
        Validation labels 0/1; missing labels (NaN) are skipped.
    scores : ndarray
        The network's probabilities in [0, 1]; rows with a missing score are skipped.
    pos_weight : float
        The positive-class weight the network trained with (1: unweighted).
    rule : CalibrationRule
        The choice rule.

    Returns
    -------
    Calibrator
        The map, its updating step and the reason for it.

    Raises
    ------
    ValueError
        If a score lies outside [0, 1], the arrays differ in length, or ``pos_weight`` is not
        positive.
    """
    y = np.asarray(y_true, dtype=np.float64).ravel()
    s = np.asarray(scores, dtype=np.float64).ravel()
    if y.shape != s.shape:
        raise ValueError(f"y_true and scores differ in length: {len(y)} vs {len(s)}")
    if not (np.isfinite(pos_weight) and pos_weight > 0):
        raise ValueError(f"pos_weight must be positive, got {pos_weight!r}")
    ok = np.isfinite(y) & np.isfinite(s)
    y, s = y[ok], s[ok]
    if np.any((s < 0.0) | (s > 1.0)):
        raise ValueError("scores must be probabilities in [0, 1]")
    n_pos = int((y > 0.5).sum())
    n_neg = len(y) - n_pos
    rows = f"{n_pos} positive and {n_neg} negative validation rows"
    if rule.method == "identity":
        return Calibrator("identity", n_pos=n_pos, n_neg=n_neg, reason=f"forced; {rows}")
    shift = -float(np.log(pos_weight))
    undone = f"class weight {pos_weight:.3g} undone" if shift != 0.0 else "unweighted"
    if min(n_pos, n_neg) < rule.min_per_class:
        why = f"{undone}; {rows}: fewer than {rule.min_per_class} of a class, nothing tested"
        return Calibrator(
            "platt", a=1.0, b=shift, n_pos=n_pos, n_neg=n_neg, reason=why, update="reweighting"
        )
    if rule.method == "isotonic":
        x, fitted = fit_isotonic(y, s)
        return Calibrator(
            "isotonic", x=tuple(x.tolist()), y=tuple(fitted.tolist()), n_pos=n_pos, n_neg=n_neg,
            reason=f"forced; {rows}", update="isotonic",
        )  # fmt: skip
    if rule.method == "platt":
        a, b = fit_platt(y, s)
        return Calibrator(
            "platt", a=a, b=b, n_pos=n_pos, n_neg=n_neg, reason=f"forced; {rows}", update="logistic"
        )
    z = logit(s) + shift
    slope = min(n_pos, n_neg) >= rule.slope_min_per_class
    update, a, b, why = _closed_test(y, z, rule.alpha, slope=slope)
    if not slope:
        why += f"; fewer than {rule.slope_min_per_class} of a class, slope not tested"
    return Calibrator(
        "platt",
        a=a,
        b=a * shift + b,
        n_pos=n_pos,
        n_neg=n_neg,
        reason=f"{undone}; {rows}: {why}",
        update=update,
    )
