import numpy as np
import pytest

from fedcare_core.evaluation.calibration import sigmoid
from fedcare_core.evaluation.clinical import (
    brier,
    brier_reference,
    calibration_slope_intercept,
    ece,
)
from fedcare_core.evaluation.recalibration import CalibrationRule, fit_calibrator
from fedcare_core.objectives.metrics import auroc

BETA = np.array([1.0, 0.6, -0.4])
INTERCEPT = -2.6  # about an 11 % base rate


def _rows(n, rng):
    x = rng.normal(size=(n, 3))
    y = (rng.random(n) < sigmoid(INTERCEPT + x @ BETA)).astype(np.float64)
    return x, y


def _true_logit(x):
    return INTERCEPT + x @ BETA


@pytest.fixture(scope="module")
def weighted_model():
    """A logistic model trained with pos_weight = neg/pos, as FedCARE's binary heads are.

    Its risks are inflated (the intercept shifts by log(neg/pos)); returns validation and test
    (labels, scores) and the pos_weight.
    """
    rng = np.random.default_rng(7)
    x, y = _rows(4000, rng)
    design = np.column_stack([x, np.ones(len(y))])
    pos_weight = (1 - y.mean()) / y.mean()
    w = np.where(y > 0, pos_weight, 1.0)
    beta = np.zeros(4)
    for _ in range(30):  # weighted IRLS
        p = sigmoid(design @ beta)
        hess = (design * (w * p * (1 - p))[:, None]).T @ design
        beta -= np.linalg.solve(hess, design.T @ (w * (p - y)))
    xv, yv = _rows(3000, rng)
    xt, yt = _rows(4000, rng)
    score = lambda x: sigmoid(np.column_stack([x, np.ones(len(x))]) @ beta)  # noqa: E731
    return (yv, score(xv)), (yt, score(xt)), pos_weight


def test_undoing_the_class_weight_calibrates_and_keeps_the_ranking(weighted_model):
    (yv, sv), (yt, st), pos_weight = weighted_model
    assert 0.09 < yt.mean() < 0.13 and st.mean() > 0.3  # distorted: risks far above the rate
    cal = fit_calibrator(yv, sv, pos_weight=pos_weight)
    assert cal.update == "reweighting"  # nothing left for the validation rows to correct
    assert (cal.a, cal.b) == (1.0, pytest.approx(-np.log(pos_weight)))
    assert f"class weight {pos_weight:.3g} undone" in cal.reason
    pt = cal.apply(st)
    assert pt.mean() == pytest.approx(yt.mean(), abs=0.02)
    assert brier(yt, pt).value < brier_reference(yt, pt).value < brier(yt, st).value
    fit = calibration_slope_intercept(yt, pt)
    assert 0.8 < fit.slope < 1.25 and abs(fit.intercept_in_the_large) < 0.2
    assert ece(yt, pt).value < 0.03 < ece(yt, st).value
    assert auroc(yt, pt).value == auroc(yt, st).value


def _scored(n, transform, seed=0):
    x, y = _rows(n, np.random.default_rng(seed))
    return y, sigmoid(transform(_true_logit(x)))


@pytest.mark.parametrize(
    ("transform", "update", "a", "b"),
    [
        (lambda z: z, "reweighting", 1.0, 0.0),
        (lambda z: z + 1.0, "intercept", 1.0, -1.0),
        (lambda z: 2.0 * z + 2.6, "logistic", 0.5, -1.3),
    ],
)
def test_the_closed_test_finds_what_is_miscalibrated(transform, update, a, b):
    y, s = _scored(20000, transform)
    cal = fit_calibrator(y, s)
    assert cal.update == update and cal.method == "platt"
    assert cal.a == pytest.approx(a, abs=0.08) and cal.b == pytest.approx(b, abs=0.15)


def test_a_calibrated_small_site_is_left_alone_at_about_the_test_level():
    changed = 0
    for seed in range(200):
        y, s = _scored(300, lambda z: z, seed=seed)
        changed += fit_calibrator(y, s).update != "reweighting"
    assert changed <= 20  # the level is 0.05: about 10 of 200, seldom over 20


def test_a_reversed_ranking_is_never_deployed():
    y, s = _scored(5000, lambda z: -z)
    cal = fit_calibrator(y, s)
    assert cal.update == "intercept" and cal.a == 1.0


@pytest.mark.parametrize(("n_pos", "n_neg"), [(0, 50), (9, 500), (500, 9)])
def test_too_few_rows_of_a_class_only_undo_the_weight(n_pos, n_neg):
    y = np.r_[np.ones(n_pos), np.zeros(n_neg)]
    s = np.linspace(0.05, 0.95, len(y))
    cal = fit_calibrator(y, s, pos_weight=4.0)
    assert cal.update == "reweighting" and (cal.a, cal.b) == (1.0, pytest.approx(-np.log(4)))
    assert (cal.n_pos, cal.n_neg) == (n_pos, n_neg)
    assert f"{n_pos} positive and {n_neg} negative" in cal.reason
    assert "nothing tested" in cal.reason


def test_forced_methods():
    y, s = _scored(3000, lambda z: z + 0.5)
    assert fit_calibrator(y, s, rule=CalibrationRule(method="isotonic")).method == "isotonic"
    assert fit_calibrator(y, s, rule=CalibrationRule(method="identity")).method == "identity"
    platt = fit_calibrator(y, s, rule=CalibrationRule(method="platt"))
    assert platt.update == "logistic" and platt.b == pytest.approx(-0.5, abs=0.3)
    few = fit_calibrator(y[:20], s[:20], rule=CalibrationRule(method="platt"))
    assert few.update == "reweighting"


def test_missing_rows_are_skipped():
    y, s = _scored(2000, lambda z: z + 1.0)
    y_nan, s_nan = np.r_[y, np.nan, 1.0], np.r_[s, 0.3, np.nan]
    assert fit_calibrator(y_nan, s_nan) == fit_calibrator(y, s)


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="method"):
        CalibrationRule(method="beta")
    with pytest.raises(ValueError, match="alpha"):
        CalibrationRule(alpha=1.5)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        fit_calibrator(np.array([0.0, 1.0]), np.array([-0.5, 2.0]))
    with pytest.raises(ValueError, match="pos_weight"):
        fit_calibrator(np.array([0.0, 1.0]), np.array([0.5, 0.5]), pos_weight=0.0)
    with pytest.raises(ValueError, match="length"):
        fit_calibrator(np.array([0.0, 1.0]), np.array([0.5]))


def test_a_site_with_few_events_updates_at_most_its_intercept():
    y, s = _scored(500, lambda z: 2.5 * z + 4.0)  # about 55 events, the slope far off
    assert 10 <= y.sum() < 100
    cal = fit_calibrator(y, s)
    assert cal.update in {"reweighting", "intercept"} and cal.a == 1.0
    assert "slope not tested" in cal.reason
