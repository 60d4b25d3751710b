"""Split-conformal intervals of length of stay: the finite-sample rule, coverage, round trip."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from fedcare_core.evaluation.conformal import (
    DEFAULT_COVERAGE,
    ConformalInterval,
    conformal_rank,
    fit_conformal_interval,
    interval_metrics,
    min_rows,
)


def _stays(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Exchangeable (prediction, true LOS) pairs: log1p errors of a skewed spread."""
    pred = np.expm1(rng.uniform(0.5, 2.5, n))
    noise = rng.gumbel(0.0, 0.4, n)
    return pred, np.maximum(np.expm1(np.log1p(pred) + noise), 0.0)


@pytest.mark.parametrize(
    ("n", "coverage", "rank"),
    [(19, 0.9, 18), (9, 0.9, 9), (8, 0.9, 9), (99, 0.9, 90), (100, 0.9, 91), (19, 0.95, 19)],
)
def test_the_rank_is_the_finite_sample_ceiling(n, coverage, rank):
    assert conformal_rank(n, coverage) == rank


@pytest.mark.parametrize("coverage", [0.5, 0.8, 0.9, 0.95, 0.99, 0.05])
def test_min_rows_is_the_first_n_with_a_finite_interval(coverage):
    n = min_rows(coverage)
    assert conformal_rank(n, coverage) <= n
    assert all(conformal_rank(m, coverage) > m for m in range(n))
    assert n == max(1, math.ceil(coverage / (1 - coverage) - 1e-9))


def test_coverage_outside_0_1_is_refused():
    for bad in (0.0, 1.0, 1.5, -0.1):
        with pytest.raises(ValueError, match="coverage"):
            conformal_rank(10, bad)
        with pytest.raises(ValueError, match="coverage"):
            ConformalInterval(bad, 0.1, 10)


def test_the_half_width_is_the_ranked_log1p_residual():
    pred = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0])
    residual = np.array([0.05, -0.3, 0.1, 0.7, -0.2, 0.4, -0.15, 0.25, 0.6, -0.5])
    y = np.expm1(np.log1p(pred) + residual)
    fitted = fit_conformal_interval(y, pred, 0.8)  # n = 10: rank ceil(11 * 0.8) = 9
    assert fitted.available and fitted.n == 10 and fitted.coverage == 0.8
    assert fitted.quantile == pytest.approx(np.sort(np.abs(residual))[8])
    assert "10 validation rows" in fitted.reason and "rank 9 of 10" in fitted.reason


def test_missing_labels_are_skipped_and_counted_out():
    pred = np.full(12, 3.0)
    y = np.array([3.0, 4.0, np.nan, 2.0, 5.0, 3.0, np.nan, 1.0, 6.0, 3.5, 2.5, 4.5])
    fitted = fit_conformal_interval(y, pred)
    assert fitted.n == 10
    assert fitted.quantile == pytest.approx(np.log1p(3.0) - np.log1p(1.0))  # rank 10 of 10


def test_too_few_rows_give_no_interval_and_say_why():
    pred, y = np.full(8, 2.0), np.arange(8.0)
    fitted = fit_conformal_interval(y, pred, 0.9)
    assert not fitted.available and fitted.quantile is None and fitted.n == 8
    assert "8 validation rows" in fitted.reason and "at least 9" in fitted.reason
    low, high = fitted.bounds(np.array([1.0, 4.0]))
    assert np.isnan(low).all() and np.isnan(high).all()
    assert fit_conformal_interval(np.zeros(0), np.zeros(0)).reason.startswith("0 validation")
    assert fit_conformal_interval(np.arange(9.0), np.full(9, 2.0), 0.9).available


def test_negative_stays_and_mismatched_lengths_are_refused():
    with pytest.raises(ValueError, match="at least 0 days"):
        fit_conformal_interval(np.array([1.0, -2.0]), np.array([1.0, 1.0]))
    with pytest.raises(ValueError, match="differ in length"):
        fit_conformal_interval(np.ones(3), np.ones(4))


def test_bounds_are_multiplicative_in_days_and_never_below_zero():
    interval = ConformalInterval(0.9, 0.5, 100, "test")
    days = np.array([0.0, 1.0, 4.0, 20.0, np.nan])
    low, high = interval.bounds(days)
    np.testing.assert_allclose(high[:4], np.expm1(np.log1p(days[:4]) + 0.5))
    np.testing.assert_allclose(low[:4], np.expm1(np.maximum(np.log1p(days[:4]) - 0.5, 0.0)))
    assert low[0] == 0.0 and (low[:4] >= 0).all()
    assert (low[:4] <= days[:4]).all() and (days[:4] <= high[:4]).all()
    assert (high[1:4] - days[1:4] > days[1:4] - low[1:4]).all()  # asymmetric: longer upwards
    assert np.diff(high[:4] - low[:4]).min() > 0  # wider for longer predicted stays
    assert np.isnan(low[4]) and np.isnan(high[4])


def test_coverage_is_near_nominal_on_exchangeable_data():
    rng = np.random.default_rng(7)
    n_cal, n_test, trials = 19, 500, 400  # rank 18 of 19: expected coverage exactly 18/20
    covered = []
    for _ in range(trials):
        pred, y = _stays(rng, n_cal + n_test)
        fitted = fit_conformal_interval(y[:n_cal], pred[:n_cal], 0.9)
        covered.append(interval_metrics(y[n_cal:], *fitted.bounds(pred[n_cal:])).coverage)
    assert np.mean(covered) == pytest.approx(0.9, abs=0.01)


@pytest.mark.parametrize("coverage", [0.8, DEFAULT_COVERAGE, 0.95])
def test_a_large_calibration_set_covers_between_nominal_and_nominal_plus_1_over_n(coverage):
    rng = np.random.default_rng(11)
    n = 400
    means = []
    for _ in range(60):
        pred, y = _stays(rng, n + 4000)
        fitted = fit_conformal_interval(y[:n], pred[:n], coverage)
        means.append(interval_metrics(y[n:], *fitted.bounds(pred[n:])).coverage)
    expected = conformal_rank(n, coverage) / (n + 1)
    assert coverage <= expected <= coverage + 1 / (n + 1)
    assert np.mean(means) == pytest.approx(expected, abs=0.006)


def test_a_wider_coverage_gives_a_wider_interval():
    rng = np.random.default_rng(3)
    pred, y = _stays(rng, 500)
    widths = [fit_conformal_interval(y, pred, c).quantile for c in (0.5, 0.8, 0.9, 0.99)]
    assert widths == sorted(widths) and len(set(widths)) == 4


def test_the_interval_round_trips_through_json():
    fitted = fit_conformal_interval(np.arange(1.0, 31.0), np.full(30, 10.0))
    none = fit_conformal_interval(np.ones(3), np.ones(3))
    for interval in (fitted, none):
        back = ConformalInterval.from_dict(json.loads(json.dumps(interval.to_dict())))
        assert back == interval
    assert fitted.summary() == {
        "coverage": 0.9,
        "quantile_log1p_days": fitted.quantile,
        "n_val": 30,
        "reason": fitted.reason,
    }
    with pytest.raises(ValueError, match="unknown interval method"):
        ConformalInterval.from_dict({**fitted.to_dict(), "method": "bootstrap"})
    with pytest.raises(ValueError, match="quantile"):
        ConformalInterval(0.9, -1.0, 10)


def test_interval_metrics_count_rows_with_a_label_and_an_interval():
    y = np.array([1.0, 5.0, 3.0, np.nan, 2.0, 8.0])
    low = np.array([0.5, 1.0, 3.0, 0.0, np.nan, 2.0])
    high = np.array([2.0, 4.0, 6.0, 9.0, np.nan, 7.0])
    metrics = interval_metrics(y, low, high)
    assert metrics.n == 4
    assert metrics.coverage == pytest.approx(2 / 4)  # 1 in, 5 out, 3 on the edge in, 8 out
    assert metrics.mean_width_days == pytest.approx(np.mean([1.5, 3.0, 3.0, 5.0]))
    empty = interval_metrics(y, np.full(6, np.nan), np.full(6, np.nan))
    assert empty.coverage is None and empty.n == 0 and "no labelled row" in empty.reason
    with pytest.raises(ValueError, match="lengths differ"):
        interval_metrics(y, low[:3], high)
