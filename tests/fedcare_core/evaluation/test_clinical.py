import math

import numpy as np
import pytest

from fedcare_core.evaluation.calibration import logit, sigmoid
from fedcare_core.evaluation.clinical import (
    auprc,
    bootstrap_interval,
    brier,
    brier_reference,
    calibration_slope_intercept,
    confusion_at,
    ece,
    mae_bias_by_band,
    spread,
    subgroup_metrics,
    threshold_for_sensitivity,
)
from fedcare_core.objectives.metrics import MetricValue, auroc


def _risks(n, seed=0, rate_logit=-2.0):
    """Labels drawn from their risks: a perfectly calibrated model."""
    rng = np.random.default_rng(seed)
    p = sigmoid(rate_logit + rng.normal(size=n))
    return (rng.random(n) < p).astype(float), p


# --- discrimination and calibration -------------------------------------------------------


def test_auprc_hand_made():
    assert auprc(np.array([0, 1, 0, 1]), np.array([0.1, 0.4, 0.35, 0.8])).value == 1.0
    # precision 1 at recall 1/2, then 2/3 at recall 1 (the negative at 0.8 in between)
    assert auprc(np.array([1, 0, 1]), np.array([0.9, 0.8, 0.7])).value == pytest.approx(5 / 6)
    m = auprc(np.array([0.0, 0.0, np.nan]), np.array([0.2, 0.3, 0.9]))
    assert m.value is None and "no positive" in m.reason and m.n == 2


def test_auprc_brier_match_sklearn_with_ties():
    metrics = pytest.importorskip("sklearn.metrics")
    y, p = _risks(2000, seed=1)
    p = np.round(p, 2)  # ties share a threshold
    assert auprc(y, p).value == pytest.approx(metrics.average_precision_score(y, p), abs=1e-12)
    assert brier(y, p).value == pytest.approx(metrics.brier_score_loss(y, p), abs=1e-12)


def test_brier_and_its_reference_use_the_same_rows():
    y = np.array([1.0, 0.0, 0.0, 0.0, 1.0, np.nan])
    p = np.array([0.5, 0.5, 0.0, 1.0, np.nan, 0.3])
    assert brier(y, p).value == pytest.approx((0.25 + 0.25 + 0 + 1) / 4)
    ref = brier_reference(y, p)
    assert ref.value == pytest.approx(0.25 * 0.75) and ref.n == 4
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        brier(np.array([1.0]), np.array([1.5]))


def test_ece_hand_made_with_right_closed_bins():
    y = np.array([0.0, 0.0, 1.0, 1.0])
    p = np.array([0.05, 0.15, 0.15, 0.95])
    # bins: {0.05}: |0 - .05|, {.15, .15}: |1 - .3|, {.95}: |1 - .95|
    assert ece(y, p).value == pytest.approx((0.05 + 0.7 + 0.05) / 4)
    # 0.1 lies in the first bin [0, .1], with 0.05: |0 + 1 - .15| over 2 rows
    assert ece(np.array([0.0, 1.0]), np.array([0.05, 0.1])).value == pytest.approx(0.85 / 2)
    assert ece(y, p, n_bins=1).value == pytest.approx(abs(2 - 1.3) / 4)
    with pytest.raises(ValueError, match="n_bins"):
        ece(y, p, n_bins=0)


def test_ece_matches_sklearn_calibration_curve():
    calibration = pytest.importorskip("sklearn.calibration")
    y, p = _risks(3000, seed=2)
    p = sigmoid(1.8 * logit(p))  # overconfident, so the ECE is far from 0
    prob_true, prob_pred = calibration.calibration_curve(y, p, n_bins=10)
    counts = np.bincount(np.searchsorted(np.linspace(0, 1, 11)[1:-1], p), minlength=10)
    counts = counts[counts > 0]
    expected = np.sum(counts * np.abs(prob_true - prob_pred)) / len(p)
    assert ece(y, p).value == pytest.approx(expected, abs=1e-12)
    assert expected > 0.02


def test_calibration_slope_and_intercept():
    y, p = _risks(20000, seed=3)
    fit = calibration_slope_intercept(y, p)
    assert fit.slope == pytest.approx(1.0, abs=0.1)
    assert fit.intercept == pytest.approx(0.0, abs=0.2)
    assert fit.intercept_in_the_large == pytest.approx(0.0, abs=0.1)
    over = calibration_slope_intercept(y, sigmoid(2.0 * logit(p)))
    assert over.slope == pytest.approx(0.5, abs=0.05)  # overconfident: slope below 1
    high = calibration_slope_intercept(y, sigmoid(logit(p) + 1.0))
    assert high.intercept_in_the_large == pytest.approx(-1.0, abs=0.1)  # risks too high
    single = calibration_slope_intercept(np.ones(5), np.full(5, 0.5))
    assert single.slope is None and "no negative" in single.reason


def test_calibration_slope_matches_sklearn():
    linear_model = pytest.importorskip("sklearn.linear_model")
    y, p = _risks(3000, seed=4)
    z = logit(p)
    ref = linear_model.LogisticRegression(C=1e12, tol=1e-12, max_iter=1000).fit(z[:, None], y)
    fit = calibration_slope_intercept(y, p)
    assert fit.slope == pytest.approx(ref.coef_[0, 0], abs=1e-4)
    assert fit.intercept == pytest.approx(ref.intercept_[0], abs=1e-4)


# --- operating point ----------------------------------------------------------------------


def test_threshold_for_sensitivity_and_confusion_hand_made():
    y = np.array([1, 1, 1, 1, 0, 0])
    p = np.array([0.9, 0.8, 0.6, 0.3, 0.7, 0.2])
    t = threshold_for_sensitivity(y, p, target=0.75)
    assert t.value == 0.6  # the third of four positives
    c = confusion_at(y, p, t.value)
    assert (c.tp, c.fp, c.tn, c.fn, c.n) == (3, 1, 1, 1, 6)
    assert (c.sensitivity, c.specificity, c.ppv, c.npv) == (0.75, 0.5, 0.75, 0.5)
    # the highest such threshold: just above it the sensitivity falls below the target
    assert confusion_at(y, p, np.nextafter(0.6, 1.0)).sensitivity < 0.75
    assert threshold_for_sensitivity(y, p, target=1.0).value == 0.3
    assert threshold_for_sensitivity(y, p, target=0.01).value == 0.9


def test_threshold_target_has_no_float_off_by_one():
    y = np.ones(10)
    p = np.arange(10, 0, -1) / 10  # 1.0, 0.9, ..., 0.1
    # 0.7 * 10 is 7.000000000000001 in floating point: still the 7th highest
    assert threshold_for_sensitivity(y, p, target=0.7).value == pytest.approx(0.4)


def test_threshold_and_confusion_edge_cases():
    m = threshold_for_sensitivity(np.zeros(4), np.full(4, 0.5))
    assert m.value is None and "no positive" in m.reason
    with pytest.raises(ValueError, match="target"):
        threshold_for_sensitivity(np.ones(3), np.ones(3), target=0.0)
    c = confusion_at(np.array([0, 1, np.nan]), np.array([0.1, 0.2, 0.9]), threshold=0.5)
    assert (c.tp, c.fp, c.tn, c.fn) == (0, 0, 1, 1) and c.ppv is None and c.npv == 0.5


# --- length of stay ----------------------------------------------------------------------


def test_mae_and_bias_by_band_hand_made():
    y = np.array([1.0, 2.0, 3.0, 10.0, np.nan])
    pred = np.array([2.0, 2.0, 2.0, 7.0, 5.0])
    short, medium, long = mae_bias_by_band(y, pred)
    assert (short.n, short.mae, short.bias) == (2, 0.5, 0.5)
    assert (medium.n, medium.mae, medium.bias) == (1, 1.0, -1.0)  # 3 days is a medium stay
    assert (long.n, long.mae, long.bias, long.high) == (1, 3.0, -3.0, math.inf)
    (empty,) = mae_bias_by_band(y, pred, bands=((20.0, 30.0),))
    assert (empty.n, empty.mae, empty.bias) == (0, None, None)
    with pytest.raises(ValueError, match="low < high"):
        mae_bias_by_band(y, pred, bands=((3.0, 3.0),))


# --- uncertainty -------------------------------------------------------------------------


def _patients(n_patients, stays, seed=0):
    """``stays`` identical rows per patient (a patient's risk and outcome repeat)."""
    y, p = _risks(n_patients, seed=seed, rate_logit=-1.0)
    groups = np.repeat(np.arange(n_patients), stays)
    return np.repeat(y, stays), np.repeat(p, stays), groups


def test_bootstrap_contains_the_estimate_and_is_deterministic():
    y, p, groups = _patients(150, 2)
    a = bootstrap_interval(auroc, y, p, groups, n_boot=300, seed=1)
    assert a.estimate == auroc(y, p).value
    assert a.low < a.estimate < a.high and a.n_defined == 300 and a.n_groups == 150
    assert bootstrap_interval(auroc, y, p, groups, n_boot=300, seed=1) == a
    assert bootstrap_interval(auroc, y, p, groups, n_boot=300, seed=2) != a


def test_bootstrap_resamples_patients_not_rows():
    y1, p1, g1 = _patients(60, 1)
    y8, p8, g8 = _patients(60, 8)  # each patient's row repeated 8 times
    by_patient_1 = bootstrap_interval(brier, y1, p1, g1, n_boot=400)
    by_patient_8 = bootstrap_interval(brier, y8, p8, g8, n_boot=400)
    by_row_8 = bootstrap_interval(brier, y8, p8, np.arange(len(y8)), n_boot=400)
    # duplicating a patient's rows adds no information: the patient interval is unchanged
    assert by_patient_8.low == pytest.approx(by_patient_1.low)
    assert by_patient_8.high == pytest.approx(by_patient_1.high)
    # resampling rows treats the copies as independent patients: far too narrow
    assert (by_row_8.high - by_row_8.low) < 0.6 * (by_patient_8.high - by_patient_8.low)


def test_bootstrap_skips_and_counts_undefined_resamples():
    y = np.array([1.0, 0, 0, 0, 0, 0])
    p = np.array([0.9, 0.1, 0.2, 0.3, 0.4, 0.5])
    b = bootstrap_interval(auroc, y, p, np.arange(6), n_boot=200)
    assert 0 < b.n_defined < 200  # the positive is missed in about a third of resamples
    assert f"{200 - b.n_defined} of 200 resamples" in b.reason
    none = bootstrap_interval(auroc, np.zeros(4), p[:4], np.arange(4), n_boot=20)
    assert (none.low, none.high, none.n_defined, none.estimate) == (None, None, 0, None)
    with pytest.raises(ValueError, match="level"):
        bootstrap_interval(auroc, y, p, np.arange(6), level=1.0)


def test_subgroup_metrics_and_the_largest_gap():
    y, p = _risks(200, seed=5, rate_logit=-1.0)
    attribute = np.array(["F"] * 80 + ["M"] * 70 + ["X"] * 10 + [None] * 40, dtype=object)
    report = subgroup_metrics(brier, y, p, attribute)
    by_group = {s.group: s for s in report.groups}
    assert set(by_group) == {"F", "M", "X"}  # rows with no attribute belong to none
    assert by_group["F"].value == pytest.approx(brier(y[:80], p[:80]).value)
    assert by_group["M"].n == 70 and by_group["M"].eligible
    assert not by_group["X"].eligible and "fewer than 30" in by_group["X"].reason
    f, m = by_group["F"].value, by_group["M"].value
    assert report.gap == pytest.approx(abs(f - m))
    assert report.highest == ("F" if f > m else "M") and report.lowest == ("M" if f > m else "F")


def test_subgroup_with_a_single_class_is_left_out_of_the_gap():
    rng = np.random.default_rng(6)
    y = np.r_[rng.random(60) < 0.3, np.zeros(60), rng.random(60) < 0.3].astype(float)
    p = rng.random(180)
    attribute = np.repeat([1, 2, 3], 60)
    report = subgroup_metrics(auroc, y, p, attribute)
    one, two, three = report.groups
    assert [g.group for g in report.groups] == ["1", "2", "3"]
    assert not two.eligible and two.value is None and "no positive" in two.reason
    assert one.eligible and three.eligible
    assert report.gap == pytest.approx(abs(one.value - three.value))
    alone = subgroup_metrics(auroc, y[:120], p[:120], attribute[:120])
    assert alone.gap is None and "1 eligible" in alone.reason


def test_spread_skips_undefined_values():
    s = spread([0.7, None, 0.8, float("nan"), MetricValue(0.9, 10), MetricValue(None, 0, "x")])
    assert (s.mean, s.min, s.max, s.n) == (pytest.approx(0.8), 0.7, 0.9, 3)
    assert s.std == pytest.approx(0.1)
    assert spread([0.5]).std is None
    assert spread([None]) == type(s)(None, None, None, None, 0)


def test_the_clinical_summary_gathers_each_metric() -> None:
    from fedcare_core.evaluation.clinical import (
        auprc,
        brier,
        brier_reference,
        clinical_summary,
        ece,
        mae_bias_by_band,
    )

    rng = np.random.default_rng(4)
    y = (rng.random(400) < 0.2).astype(float)
    p = np.clip(0.2 + 0.3 * (y - 0.2) + rng.normal(0, 0.1, 400), 0.01, 0.99)
    y[:5] = np.nan  # unlabelled rows are skipped
    got = clinical_summary("binary", y, p)
    assert got["auprc"] == auprc(y, p).value and got["brier"] == brier(y, p).value
    assert got["brier_reference"] == brier_reference(y, p).value and got["ece"] == ece(y, p).value
    assert got["observed_rate"] == pytest.approx(np.nanmean(y))
    assert got["mean_risk"] == pytest.approx(p[5:].mean())
    days = rng.gamma(2.0, 2.5, 300)
    pred = days + rng.normal(0.5, 1.0, 300)
    los = clinical_summary("regression", days, pred)
    assert los["bias_days"] == pytest.approx(np.mean(pred - days))
    band = mae_bias_by_band(days, pred)[0]
    assert los["mae_days_0-3"] == band.mae and los["bias_days_0-3"] == band.bias
    assert clinical_summary("binary", np.zeros(3), np.full(3, 0.5))["auprc"] is None
