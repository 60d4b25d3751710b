"""The federated recalibration: a shared slope and random-effects site intercepts."""

from __future__ import annotations

import numpy as np
import pytest

from fedcare_core.evaluation.calibration import fit_logistic, logit, sigmoid
from fedcare_core.evaluation.clinical import calibration_slope_intercept
from fedcare_core.evaluation.federated_recalibration import (
    SLOPE_GRID,
    SiteValidation,
    federated_calibrators,
    intercept_estimate,
    random_effects,
    shared_slope,
    shrunk_intercept,
    slope_profile,
)
from fedcare_core.evaluation.recalibration import DEFAULT_RULE, CalibrationRule, fit_calibrator


def _site(rng, n, *, slope=1.0, intercept=-2.0, shift=0.0, weight=1.0):
    """A site's scores (a network's weighted probabilities) and labels with a known truth."""
    z = rng.normal(0.0, 0.8, n)
    y = (rng.random(n) < sigmoid(slope * z + intercept + shift)).astype(float)
    scores = sigmoid(z + intercept + np.log(weight))  # what a class-weighted network outputs
    return SiteValidation(y, scores, weight), z


def test_the_shared_slope_is_the_stratified_fit_of_an_overfit_model():
    rng = np.random.default_rng(0)
    sites = [_site(rng, 400, slope=0.6)[0] for _ in range(20)]
    found = shared_slope([slope_profile(*s.clean()) for s in sites], alpha=0.05)
    assert found.used and found.sites == 20 and found.applied == found.slope
    # the pooled logistic fit with one intercept per site, computed with every row in one place
    y = np.concatenate([s.clean()[0] for s in sites])
    design = np.zeros((len(y), 21))
    design[:, 0] = np.concatenate([s.clean()[1] for s in sites])
    design[np.arange(len(y)), 1 + np.arange(len(y)) // 400] = 1.0
    assert found.slope == pytest.approx(fit_logistic(design, y)[0], abs=0.005)
    assert 0.4 < found.slope < 0.75


def test_a_calibrated_model_keeps_slope_one():
    rng = np.random.default_rng(1)
    sites = [_site(rng, 400)[0] for _ in range(10)]
    found = shared_slope([slope_profile(*s.clean()) for s in sites], alpha=0.05)
    assert not found.used and found.applied == 1.0 and found.p_value >= 0.05


def test_the_profile_is_the_best_intercept_at_each_slope():
    rng = np.random.default_rng(2)
    y, z = _site(rng, 300)[0].clean()
    profile = slope_profile(y, z)
    assert profile.shape == SLOPE_GRID.shape and 1.0 in SLOPE_GRID
    b, _ = intercept_estimate(y, z, 1.0)
    at_one = profile[int(np.flatnonzero(SLOPE_GRID == 1.0)[0])]
    assert at_one == pytest.approx(float(np.sum(y * (z + b) - np.logaddexp(0, z + b))))


def test_random_effects_pool_alike_sites_and_spread_unlike_ones():
    alike = [(0.10, 0.2), (0.12, 0.2), (0.08, 0.25)]
    mean, tau2 = random_effects(alike)
    assert tau2 == 0.0 and 0.08 < mean < 0.12
    unlike = [(-1.0, 0.1), (0.0, 0.1), (1.0, 0.1)]
    mean, tau2 = random_effects(unlike)
    # DerSimonian–Laird by hand: equal weights 100, Q = 200, denominator 300 - 30000/300 = 200
    assert mean == pytest.approx(0.0) and tau2 == pytest.approx((200 - 2) / 200)


def test_shrinkage_moves_an_intercept_toward_the_mean_by_its_noise():
    assert shrunk_intercept(1.0, 0.3, 0.0, 0.0) == 0.0
    assert shrunk_intercept(1.0, 0.1, 0.0, 1.0) == pytest.approx(1 / 1.01)
    noisy, precise = shrunk_intercept(1.0, 1.0, 0.0, 0.25), shrunk_intercept(1.0, 0.1, 0.0, 0.25)
    assert 0 < noisy < precise < 1


def test_a_site_whose_rate_differs_keeps_its_own_intercept():
    rng = np.random.default_rng(3)
    sites = [_site(rng, 600, weight=8.0)[0] for _ in range(8)]
    sites.append(_site(rng, 600, shift=1.5, weight=8.0)[0])
    calibrators = federated_calibrators(sites, DEFAULT_RULE)
    means = [c.apply(s.scores).mean() for c, s in zip(calibrators, sites, strict=True)]
    observed = [float(np.mean(s.y)) for s in sites]
    assert means[-1] == pytest.approx(observed[-1], abs=0.05)
    assert np.mean(means[:-1]) == pytest.approx(np.mean(observed[:-1]), abs=0.02)
    assert "between-site variance" in calibrators[-1].reason


def test_many_small_sites_pool_calibrated_where_own_updates_do_not():
    """30 sites of ~40 events, alike: pooled fresh risks keep slope 1 under the federated rule."""
    rng = np.random.default_rng(4)
    pairs = [(_site(rng, 350, weight=8.0)[0], _site(rng, 700, weight=8.0)[0]) for _ in range(30)]
    val = [v for v, _ in pairs]
    federated = federated_calibrators(val, DEFAULT_RULE)
    own = [fit_calibrator(v.y, v.scores, pos_weight=v.pos_weight) for v in val]

    def pooled_slope(calibrators):
        y = np.concatenate([t.y for _, t in pairs])
        fresh = zip(calibrators, pairs, strict=True)
        p = np.concatenate([c.apply(t.scores) for c, (_, t) in fresh])
        return calibration_slope_intercept(y, p).slope

    assert abs(pooled_slope(federated) - 1.0) < abs(pooled_slope(own) - 1.0)
    assert pooled_slope(federated) == pytest.approx(1.0, abs=0.1)


def test_small_sites_without_ten_events_each_still_pool_their_recalibration():
    """Small hospitals: ~4 events a site, none with 10; an overfit model is still recalibrated."""
    rng = np.random.default_rng(8)

    def site(n):
        return _site(rng, n, slope=0.4, weight=8.0)[0]

    pairs = [(site(40), site(4000)) for _ in range(30)]
    val = [v for v, _ in pairs]
    assert max(min(v.counts()) for v in val) < DEFAULT_RULE.min_per_class
    federated = federated_calibrators(val, DEFAULT_RULE)
    assert all("all sites with one" in c.reason for c in federated)
    assert federated[0].update == "logistic" and federated[0].a < 0.8
    own = [fit_calibrator(v.y, v.scores, pos_weight=v.pos_weight) for v in val]
    assert all(c.update == "reweighting" for c in own)  # alone, nothing to fit

    y = np.concatenate([t.y for _, t in pairs])
    p = np.concatenate([c.apply(t.scores) for c, (_, t) in zip(federated, pairs, strict=True)])
    assert calibration_slope_intercept(y, p).slope == pytest.approx(1.0, abs=0.2)


def test_sites_without_the_objective_or_rows_are_handled():
    rng = np.random.default_rng(5)
    full = [_site(rng, 400, weight=4.0)[0] for _ in range(3)]
    few = SiteValidation(np.array([1.0, 0.0, 0.0, np.nan]), np.array([0.6, 0.3, 0.2, 0.5]), 4.0)
    calibrators = federated_calibrators([*full, None, few], DEFAULT_RULE)
    assert calibrators[3].method == "identity"
    assert "the mean intercept" in calibrators[4].reason
    assert (calibrators[4].n_pos, calibrators[4].n_neg) == (1, 2)
    # the class weight is undone for every site, the small one included
    assert calibrators[4].b == pytest.approx(calibrators[4].a * -np.log(4.0) + 0, abs=0.5)


def test_one_site_falls_back_to_its_own_closed_test():
    rng = np.random.default_rng(6)
    site = _site(rng, 500, weight=5.0)[0]
    (calibrator,) = federated_calibrators([site], DEFAULT_RULE)
    own = fit_calibrator(site.y, site.scores, pos_weight=5.0)
    assert (calibrator.a, calibrator.b, calibrator.update) == (own.a, own.b, own.update)
    assert calibrator.reason.startswith("calibrated alone")


def test_only_the_auto_rule_is_federated():
    with pytest.raises(ValueError, match="method='auto'"):
        federated_calibrators([], CalibrationRule(method="platt"))


def test_the_map_is_platt_form_on_the_raw_score():
    rng = np.random.default_rng(7)
    sites = [_site(rng, 400, slope=0.5, weight=3.0)[0] for _ in range(6)]
    calibrators = federated_calibrators(sites, DEFAULT_RULE)
    c = calibrators[0]
    assert c.update == "logistic"
    s = sites[0].scores
    np.testing.assert_allclose(c.apply(s), sigmoid(c.a * logit(s) + c.b))
