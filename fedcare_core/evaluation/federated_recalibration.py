"""Recalibrating a binary objective across the sites that pursue it (issue 31).

A site's own validation rows are few (at K = 30 on Diabetes 130, about 40 readmissions), so
its own calibration update is mostly noise, and pooling many sites' noisy intercepts spreads
the pooled risks: the pooled calibration slope falls below 1 although each site is
calibrated in the large. The ``auto`` calibration therefore fits one recalibration model
across the federation, from a few numbers per site and never a row:

1. **Undo the weighting** at each site (as :mod:`fedcare_core.evaluation.recalibration`): the
   logit minus ``log w``, ``w`` the site's positive-class weight. Exact, costs no row.
2. **A shared slope.** Each site sends the profile log-likelihood of its validation rows over
   a fixed grid of slopes :data:`SLOPE_GRID` (its own intercept maximised at each slope):
   :func:`slope_profile`. The coordinator sums the curves; their maximiser is the slope of a
   logistic recalibration with a separate intercept per site (a stratified fit). It is used
   only if the likelihood-ratio test against slope 1 is significant at ``alpha``
   (:func:`shared_slope`), as in Vergouwe et al.'s closed test.
3. **Intercepts, shrunk.** With that slope fixed, each site sends its calibration-in-the-large
   ``b_k`` and its standard error (:func:`intercept_estimate`); the coordinator's
   DerSimonian–Laird random-effects meta-analysis gives their mean and between-site variance
   ``tau^2`` (:func:`random_effects`); each site's intercept is shrunk toward the mean by
   ``tau^2 / (tau^2 + se_k^2)`` (:func:`shrunk_intercept`). Sites alike (``tau^2 = 0``) share
   the mean; a site whose rate truly differs keeps most of its own. A site with fewer than
   ``min_per_class`` rows of a class sends nothing and receives the mean.

**Small sites.** Where fewer than two sites hold ``min_per_class`` rows of each class (small
hospitals: 300 patients a site leave about four validation readmissions each), every site
with at least one row of each class sends instead. Each profile is a stratum of the same
stratified likelihood, valid however few its rows, and the meta-analysis weighs each noisy
intercept by its standard error; a site alone has nothing to fit (its own closed test tests
nothing below ``min_per_class``), so pooling is the only recalibration these sites can get.

With fewer than two sites able to send even so, each site falls back to its own closed test
(:func:`~fedcare_core.evaluation.recalibration.fit_calibrator`): this is what a site of a
multi-site federation does in its own Stage 2 run, where no round follows.

References: T. P. A. Debray et al., "A framework for developing, implementing, and evaluating
clinical prediction models in an individual participant data meta-analysis", Statistics in
Medicine, 2013; R. DerSimonian and N. Laird, "Meta-analysis in clinical trials", Controlled
Clinical Trials, 1986; Y. Vergouwe et al., Statistics in Medicine, 2017.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from fedcare_core.evaluation.calibration import (
    Calibrator,
    fit_intercept,
    log_likelihood,
    logit,
    lr_p_value,
    sigmoid,
)
from fedcare_core.evaluation.recalibration import CalibrationRule, fit_calibrator

__all__ = [
    "SLOPE_GRID",
    "SharedSlope",
    "SiteValidation",
    "federated_calibrators",
    "intercept_estimate",
    "random_effects",
    "shared_slope",
    "shrunk_intercept",
    "slope_profile",
]

#: The slopes each site's profile log-likelihood is evaluated at (the coordinator refines the
#: maximum between grid points by a parabola). Includes 1 exactly.
SLOPE_GRID = np.round(np.arange(0.05, 3.0 + 1e-9, 0.05), 2)


@dataclass(frozen=True)
class SiteValidation:
    """One site's validation labels and raw scores of a binary objective, and its class weight."""

    y: np.ndarray
    scores: np.ndarray
    pos_weight: float = 1.0

    def clean(self) -> tuple[np.ndarray, np.ndarray]:
        """Labels and reweighted logits of the rows with a label and a score."""
        y = np.asarray(self.y, dtype=np.float64).ravel()
        s = np.asarray(self.scores, dtype=np.float64).ravel()
        if y.shape != s.shape:
            raise ValueError(f"labels and scores differ in length: {len(y)} vs {len(s)}")
        ok = np.isfinite(y) & np.isfinite(s)
        return y[ok], logit(np.clip(s[ok], 0.0, 1.0)) - float(np.log(self.pos_weight))

    def counts(self) -> tuple[int, int]:
        """Positive and negative labelled rows with a score."""
        y, _ = self.clean()
        n_pos = int((y > 0.5).sum())
        return n_pos, len(y) - n_pos


@dataclass(frozen=True)
class SharedSlope:
    """The federation's slope, its likelihood-ratio test against 1, and whether it is used."""

    slope: float
    p_value: float
    used: bool
    sites: int

    @property
    def applied(self) -> float:
        """The slope the sites apply: :attr:`slope` if used, else 1."""
        return self.slope if self.used else 1.0


def slope_profile(y: np.ndarray, z: np.ndarray, grid: np.ndarray = SLOPE_GRID) -> np.ndarray:
    """A site's message: its profile log-likelihood at each slope of ``grid``.

    Parameters
    ----------
    y : ndarray
        The site's validation labels 0/1.
    z : ndarray
        Their reweighted logits.
    grid : ndarray
        The slopes.

    Returns
    -------
    ndarray
        ``max_b sum log P(y | a z + b)`` for each ``a`` of ``grid``.
    """
    return np.array([log_likelihood(y, a * z + fit_intercept(y, a * z)) for a in grid])


def shared_slope(
    profiles: Sequence[np.ndarray], alpha: float, grid: np.ndarray = SLOPE_GRID
) -> SharedSlope:
    """The coordinator's step: the slope maximising the summed profiles, and its test.

    Parameters
    ----------
    profiles
        The sites' :func:`slope_profile` curves (at least one).
    alpha
        Level of the likelihood-ratio test against slope 1 (1 df).
    grid
        The slopes the curves were evaluated at (must contain 1).

    Returns
    -------
    SharedSlope
        The maximiser (refined by a parabola through the best grid point and its neighbours),
        the test's p-value, and whether the slope is used (p below ``alpha``).
    """
    total = np.sum(np.asarray(profiles, dtype=np.float64), axis=0)
    best = int(np.argmax(total))
    slope = float(grid[best])
    if 0 < best < len(grid) - 1:
        left, mid, right = total[best - 1 : best + 2]
        curvature = left - 2.0 * mid + right
        if curvature < 0:
            slope += float(0.5 * (left - right) / curvature * (grid[best + 1] - grid[best]))
    one = int(np.flatnonzero(np.isclose(grid, 1.0))[0])
    p = lr_p_value(float(total[best]), float(total[one]), 1)
    return SharedSlope(slope, p, p < alpha and best != one, len(profiles))


def intercept_estimate(y: np.ndarray, z: np.ndarray, slope: float) -> tuple[float, float]:
    """A site's second message: its intercept with ``slope`` fixed, and the intercept's SE.

    Returns
    -------
    tuple of float
        ``b`` maximising ``sum log P(y | slope z + b)`` and ``1 / sqrt(sum p (1 - p))``.
    """
    offset = slope * z
    b = fit_intercept(y, offset)
    p = sigmoid(offset + b)
    return b, float(1.0 / np.sqrt(max(float(np.sum(p * (1.0 - p))), 1e-12)))


def random_effects(estimates: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """DerSimonian–Laird: the pooled mean of ``(estimate, se)`` pairs and ``tau^2``.

    Returns
    -------
    tuple of float
        The random-effects mean and the between-site variance (0 when the sites agree).
    """
    b = np.array([e for e, _ in estimates], dtype=np.float64)
    w = 1.0 / np.array([s for _, s in estimates], dtype=np.float64) ** 2
    fixed = float(np.sum(w * b) / np.sum(w))
    q = float(np.sum(w * (b - fixed) ** 2))
    denominator = float(np.sum(w) - np.sum(w**2) / np.sum(w))
    tau2 = max(0.0, (q - (len(b) - 1)) / denominator) if denominator > 0 else 0.0
    w_star = 1.0 / (1.0 / w + tau2)
    return float(np.sum(w_star * b) / np.sum(w_star)), tau2


def shrunk_intercept(b: float, se: float, mean: float, tau2: float) -> float:
    """A site's intercept shrunk toward the federation's ``mean`` (empirical Bayes)."""
    return mean + tau2 / (tau2 + se**2) * (b - mean) if tau2 > 0 else mean


def _local(sites: Sequence[SiteValidation | None], rule: CalibrationRule) -> list[Calibrator]:
    why = (
        "calibrated alone (fewer than two of the run's clients hold validation rows of each "
        "class): its own closed test"
    )
    out = []
    for site in sites:
        if site is None:
            out.append(Calibrator("identity", reason="not the client's objective"))
            continue
        own = fit_calibrator(site.y, site.scores, pos_weight=site.pos_weight, rule=rule)
        out.append(replace(own, reason=f"{why}; {own.reason}"))
    return out


def _senders(
    sites: Sequence[SiteValidation | None], min_per_class: int
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """The sites holding ``min_per_class`` validation rows of each class, by index."""
    return {
        i: site.clean()
        for i, site in enumerate(sites)
        if site is not None and min(site.counts()) >= min_per_class
    }


def _site_calibrator(
    site: SiteValidation, slope: SharedSlope, intercept: float, why: str
) -> Calibrator:
    """The Platt-form map of a site: its class weight undone, the slope, the intercept."""
    n_pos, n_neg = site.counts()
    a = slope.applied
    reason = (
        f"class weight {site.pos_weight:.3g} undone; {n_pos} positive and {n_neg} negative "
        f"validation rows; {why}"
    )
    update = "logistic" if slope.used else "intercept"
    b = intercept - a * float(np.log(site.pos_weight))
    return Calibrator("platt", a=a, b=b, n_pos=n_pos, n_neg=n_neg, reason=reason, update=update)


def federated_calibrators(
    sites: Sequence[SiteValidation | None], rule: CalibrationRule
) -> list[Calibrator]:
    """Every site's calibrator of one binary objective, by the federated rule (module doc).

    Parameters
    ----------
    sites
        Per client, its validation scores, or None where it does not pursue the objective.
    rule
        ``min_per_class`` (rows of each class a site needs to send) and ``alpha`` (the slope's
        test); its ``method`` must be ``"auto"``.

    Returns
    -------
    list of Calibrator
        In the order of ``sites``: Platt-form maps ``sigmoid(a logit(s) + b)`` whose reason
        gives the shared slope, the site's own and shrunk intercepts and ``tau^2``; the identity
        for a None; each site's own closed test when fewer than two sites can send.
    """
    if rule.method != "auto":
        raise ValueError("federated_calibrators needs CalibrationRule(method='auto')")
    senders = _senders(sites, rule.min_per_class)
    small = len(senders) < 2
    if small:  # small sites: every site with a row of each class sends (module doc)
        senders = _senders(sites, 1)
    if len(senders) < 2:
        return _local(sites, rule)
    slope = shared_slope([slope_profile(y, z) for y, z in senders.values()], rule.alpha)
    own = {i: intercept_estimate(y, z, slope.applied) for i, (y, z) in senders.items()}
    mean, tau2 = random_effects(list(own.values()))
    test = "used" if slope.used else "not used"
    few = f" (none with {rule.min_per_class} of each class: all sites with one)" if small else ""
    shared = (
        f"federated recalibration over {len(senders)} sites' validation rows{few}: shared slope "
        f"{slope.slope:.3g} (against 1: p = {slope.p_value:.3g}, {test}), intercepts "
        f"meta-analysed (mean {mean:+.3g}, between-site variance {tau2:.3g})"
    )
    out = []
    for i, site in enumerate(sites):
        if site is None:
            out.append(Calibrator("identity", reason="not the client's objective"))
        elif i in own:
            b_k, se = own[i]
            b = shrunk_intercept(b_k, se, mean, tau2)
            why = f"{shared}; own intercept {b_k:+.3g} ± {se:.2g}, shrunk to {b:+.3g}"
            out.append(_site_calibrator(site, slope, b, why))
        else:
            why = f"{shared}; too few rows of a class to send: the mean intercept {mean:+.3g}"
            out.append(_site_calibrator(site, slope, mean, why))
    return out
