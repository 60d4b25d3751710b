import json

import numpy as np
import pytest

from fedcare_core.evaluation.calibration import (
    CalibrationRule,
    Calibrator,
    fit_calibrator,
    fit_platt,
    logit,
    sigmoid,
)
from fedcare_core.evaluation.clinical import (
    brier,
    brier_reference,
    calibration_slope_intercept,
    ece,
)
from fedcare_core.evaluation.metrics import auroc

BETA = np.array([1.0, 0.6, -0.4])
INTERCEPT = -2.6  # about an 11 % base rate


def _rows(n, rng):
    x = rng.normal(size=(n, 3))
    y = (rng.random(n) < sigmoid(INTERCEPT + x @ BETA)).astype(np.float64)
    return np.column_stack([x, np.ones(n)]), y


@pytest.fixture(scope="module")
def weighted_model():
    """A logistic model trained with pos_weight = neg/pos, as the imbalanced-loss models are.

    Its risks are inflated (the intercept shifts by log(neg/pos)); returns validation and test
    (labels, scores) and the pos_weight.
    """
    rng = np.random.default_rng(7)
    x, y = _rows(4000, rng)
    pos_weight = (1 - y.mean()) / y.mean()
    w = np.where(y > 0, pos_weight, 1.0)
    beta = np.zeros(4)
    for _ in range(30):  # weighted IRLS
        p = sigmoid(x @ beta)
        hess = (x * (w * p * (1 - p))[:, None]).T @ x
        beta -= np.linalg.solve(hess, x.T @ (w * (p - y)))
    xv, yv = _rows(3000, rng)
    xt, yt = _rows(4000, rng)
    return (yv, sigmoid(xv @ beta)), (yt, sigmoid(xt @ beta)), pos_weight


def test_platt_undoes_the_pos_weight_distortion(weighted_model):
    (yv, sv), (yt, st), pos_weight = weighted_model
    assert 0.09 < yt.mean() < 0.13 and st.mean() > 0.3  # distorted: risks far above the rate
    cal = fit_calibrator(yv, sv, rule=CalibrationRule(method="platt"))
    assert cal.method == "platt"
    # the distortion is a shift of the logit by log(pos_weight): Platt should find it
    assert cal.a == pytest.approx(1.0, abs=0.15)
    assert cal.b == pytest.approx(-np.log(pos_weight), abs=0.3)
    pt = cal.apply(st)
    assert pt.mean() == pytest.approx(yt.mean(), abs=0.02)
    assert brier(yt, pt).value < brier_reference(yt, pt).value < brier(yt, st).value
    fit = calibration_slope_intercept(yt, pt)
    assert 0.8 < fit.slope < 1.25 and abs(fit.intercept_in_the_large) < 0.2
    assert ece(yt, pt).value < 0.03 < ece(yt, st).value
    # a monotone increasing map keeps the ranking
    assert auroc(yt, pt).value == pytest.approx(auroc(yt, st).value)


def test_auto_rule_picks_isotonic_on_a_large_validation_set(weighted_model):
    (yv, sv), (yt, st), _ = weighted_model
    cal = fit_calibrator(yv, sv)
    assert cal.method == "isotonic" and min(cal.n_pos, cal.n_neg) >= 200
    pt = cal.apply(st)
    assert pt.mean() == pytest.approx(yt.mean(), abs=0.02)
    assert brier(yt, pt).value < brier_reference(yt, pt).value
    assert ece(yt, pt).value < 0.03
    assert np.all(np.diff(pt[np.argsort(st)]) >= 0)  # monotone


def _labels(n_pos, n_neg):
    y = np.r_[np.ones(n_pos), np.zeros(n_neg)]
    rng = np.random.default_rng(0)
    s = np.clip(0.5 * y + 0.5 * rng.random(len(y)), 0, 1)
    return y, s


@pytest.mark.parametrize(
    ("n_pos", "n_neg", "method"),
    [
        (0, 50, "identity"),
        (9, 500, "identity"),
        (500, 9, "identity"),
        (10, 10, "platt"),
        (199, 5000, "platt"),
        (200, 200, "isotonic"),
    ],
)
def test_the_choice_rule(n_pos, n_neg, method):
    cal = fit_calibrator(*_labels(n_pos, n_neg))
    assert cal.method == method
    assert (cal.n_pos, cal.n_neg) == (n_pos, n_neg)
    assert f"{n_pos} positive and {n_neg} negative" in cal.reason


def test_forced_methods_and_their_fallback():
    y, s = _labels(30, 30)
    assert fit_calibrator(y, s, rule=CalibrationRule(method="isotonic")).method == "isotonic"
    assert fit_calibrator(y, s, rule=CalibrationRule(method="identity")).method == "identity"
    y, s = _labels(5, 30)
    assert fit_calibrator(y, s, rule=CalibrationRule(method="platt")).method == "identity"


def test_unknown_options_raise():
    with pytest.raises(ValueError, match="method"):
        CalibrationRule(method="beta")
    with pytest.raises(ValueError, match="method"):
        Calibrator("temperature")
    with pytest.raises(ValueError, match="unknown"):
        Calibrator.from_dict({"method": "platt", "slope": 2.0})
    with pytest.raises(ValueError, match="increase"):
        Calibrator("isotonic", x=(0.5, 0.2), y=(0.1, 0.2))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        fit_calibrator(np.array([0.0, 1.0]), np.array([-0.5, 2.0]))


def test_missing_rows_are_skipped_in_fit_and_kept_as_nan_in_apply():
    y, s = _labels(40, 60)
    y_nan, s_nan = np.r_[y, np.nan, 1.0], np.r_[s, 0.3, np.nan]
    assert fit_calibrator(y_nan, s_nan) == fit_calibrator(y, s)
    for cal in (
        fit_calibrator(y, s),
        Calibrator("identity"),
        Calibrator("isotonic", x=(0.0, 1.0), y=(0.2, 0.4)),
    ):
        out = cal.apply(np.array([np.nan, 0.5]))
        assert out.dtype == np.float64 and np.isnan(out[0]) and np.isfinite(out[1])


@pytest.mark.parametrize(
    "cal",
    [
        Calibrator("identity", reason="too few"),
        Calibrator("platt", a=0.9, b=-2.1, n_pos=40, n_neg=300, reason="r"),
        Calibrator("isotonic", x=(0.1, 0.4, 0.9), y=(0.0, 0.2, 0.7), n_pos=250, n_neg=900),
    ],
)
def test_round_trip_through_json(cal):
    back = Calibrator.from_dict(json.loads(json.dumps(cal.to_dict())))
    assert back == cal
    s = np.linspace(0, 1, 11)
    np.testing.assert_array_equal(back.apply(s), cal.apply(s))


def test_isotonic_apply_interpolates_and_clips():
    cal = Calibrator("isotonic", x=(0.2, 0.6), y=(0.1, 0.5))
    np.testing.assert_allclose(
        cal.apply(np.array([0.0, 0.2, 0.4, 0.6, 1.0])), [0.1, 0.1, 0.3, 0.5, 0.5]
    )


def test_platt_never_returns_exactly_zero_or_one():
    out = Calibrator("platt", a=50.0, b=0.0).apply(np.array([0.0, 1.0, 1e-300, 1 - 1e-17]))
    assert np.all((out > 0) & (out < 1))


def test_platt_matches_a_direct_minimisation_of_its_objective():
    from scipy.optimize import minimize

    rng = np.random.default_rng(3)
    y = (rng.random(300) < 0.2).astype(float)
    s = sigmoid(rng.normal(size=300) + 1.5 * y - 0.5)
    n_pos, n_neg = int(y.sum()), int(len(y) - y.sum())
    t = np.where(y > 0, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
    z = logit(s)

    def loss(w):
        f = w[0] * z + w[1]
        return np.sum(np.logaddexp(0, f) - t * f)

    ref = minimize(loss, np.zeros(2), method="BFGS", options={"gtol": 1e-10}).x
    np.testing.assert_allclose(fit_platt(y, s), ref, atol=1e-4)


def test_platt_is_finite_and_deterministic_on_separable_rows():
    s = np.linspace(0.01, 0.99, 40)
    y = (s > 0.7).astype(float)
    n_pos = int(y.sum())
    n_neg = 40 - n_pos
    a, b = fit_platt(y, s)
    assert np.isfinite([a, b]).all() and a > 0
    assert fit_platt(y, s) == (a, b)
    # the fit with an intercept reproduces the mean of Platt's smoothed targets
    smoothed = (n_pos * (n_pos + 1) / (n_pos + 2) + n_neg / (n_neg + 2)) / 40
    assert Calibrator("platt", a=a, b=b).apply(s).mean() == pytest.approx(smoothed, abs=1e-4)


def test_isotonic_matches_sklearn():
    sklearn_isotonic = pytest.importorskip("sklearn.isotonic")
    rng = np.random.default_rng(5)
    s = np.round(rng.random(600), 2)  # ties
    y = (rng.random(600) < s**2).astype(float)
    cal = fit_calibrator(y, s, rule=CalibrationRule(method="isotonic"))
    ref = sklearn_isotonic.IsotonicRegression(out_of_bounds="clip").fit(s, y)
    grid = np.linspace(-0.1, 1.1, 241).clip(0, 1)
    np.testing.assert_allclose(cal.apply(grid), ref.predict(grid), atol=1e-12)
    assert len(cal.x) < len(np.unique(s))  # flat runs are compressed
