import json

import numpy as np
import pytest

from fedcare_core.evaluation.calibration import Calibrator, fit_isotonic, fit_platt, logit, sigmoid


def test_unknown_options_raise():
    with pytest.raises(ValueError, match="method"):
        Calibrator("temperature")
    with pytest.raises(ValueError, match="update"):
        Calibrator("platt", update="beta")
    with pytest.raises(ValueError, match="unknown"):
        Calibrator.from_dict({"method": "platt", "slope": 2.0})
    with pytest.raises(ValueError, match="increase"):
        Calibrator("isotonic", x=(0.5, 0.2), y=(0.1, 0.2))


def test_missing_scores_are_kept_as_nan_in_apply():
    for cal in (
        Calibrator("platt", a=0.8, b=-1.0),
        Calibrator("identity"),
        Calibrator("isotonic", x=(0.0, 1.0), y=(0.2, 0.4)),
    ):
        out = cal.apply(np.array([np.nan, 0.5]))
        assert out.dtype == np.float64 and np.isnan(out[0]) and np.isfinite(out[1])


@pytest.mark.parametrize(
    "cal",
    [
        Calibrator("identity", reason="too few"),
        Calibrator("platt", a=0.9, b=-2.1, n_pos=40, n_neg=300, reason="r", update="logistic"),
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
    x, fitted = fit_isotonic(y, s)
    cal = Calibrator("isotonic", x=tuple(x), y=tuple(fitted))
    ref = sklearn_isotonic.IsotonicRegression(out_of_bounds="clip").fit(s, y)
    grid = np.linspace(-0.1, 1.1, 241).clip(0, 1)
    np.testing.assert_allclose(cal.apply(grid), ref.predict(grid), atol=1e-11)
    assert len(cal.x) < len(np.unique(s))  # flat runs are compressed
