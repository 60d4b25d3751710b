import math

import numpy as np
import pytest
from scipy import stats

from fedcare_core.evaluation.significance import nadeau_bengio_ttest


def test_hand_computed_case_with_one_degree_of_freedom():
    # J = 2: mean 2, s² = 2, correction 1/2 + 1/2 = 1, so the standard error is sqrt(2)
    r = nadeau_bengio_ttest(np.array([1.0, 3.0]), n_train=100, n_test=50)
    assert (r.mean, r.dof) == (2.0, 1)
    assert r.std_error == pytest.approx(math.sqrt(2))
    assert r.t == pytest.approx(math.sqrt(2))
    # Student's t with 1 dof is Cauchy: p = 1 - (2/π) atan|t|, quantile tan(π (q - 1/2))
    assert r.p == pytest.approx(1 - 2 / math.pi * math.atan(math.sqrt(2)))
    half = math.tan(math.pi * 0.475) * math.sqrt(2)
    assert (r.low, r.high) == (pytest.approx(2 - half), pytest.approx(2 + half))


def test_without_the_correction_term_it_is_the_paired_t_test():
    diffs = np.array([0.02, 0.01, 0.035, -0.005, 0.015, 0.025, 0.01, 0.0, 0.03, 0.02])
    plain = stats.ttest_1samp(diffs, 0.0)
    r = nadeau_bengio_ttest(diffs, n_train=10**12, n_test=1)  # n_test/n_train → 0
    assert r.t == pytest.approx(plain.statistic, rel=1e-6)
    assert r.p == pytest.approx(plain.pvalue, rel=1e-5)
    ci = plain.confidence_interval(0.95)
    assert (r.low, r.high) == (pytest.approx(ci.low, rel=1e-5), pytest.approx(ci.high, rel=1e-5))


def test_the_correction_inflates_the_variance_by_the_test_train_ratio():
    diffs = np.array([0.02, 0.01, 0.035, -0.005, 0.015, 0.025, 0.01, 0.0, 0.03, 0.02])
    plain = stats.ttest_1samp(diffs, 0.0)
    r = nadeau_bengio_ttest(diffs, n_train=900, n_test=100)  # 10-fold CV sizes
    factor = math.sqrt((1 / 10) / (1 / 10 + 100 / 900))
    assert r.t == pytest.approx(plain.statistic * factor)
    assert r.p > plain.pvalue
    assert r.high - r.low > ci_width(plain)


def ci_width(result):
    ci = result.confidence_interval(0.95)
    return ci.high - ci.low


def test_degenerate_and_invalid_inputs():
    zero = nadeau_bengio_ttest(np.zeros(5), 80, 20)
    assert (zero.t, zero.p, zero.low, zero.high) == (0.0, 1.0, 0.0, 0.0)
    same = nadeau_bengio_ttest(np.full(5, -0.1), 80, 20)
    assert same.t == -math.inf and same.p == 0.0
    assert nadeau_bengio_ttest(np.array([1.0, np.nan, 3.0]), 100, 50).dof == 1
    with pytest.raises(ValueError, match="at least 2"):
        nadeau_bengio_ttest(np.array([0.1, np.nan]), 80, 20)
    with pytest.raises(ValueError, match="positive"):
        nadeau_bengio_ttest(np.array([0.1, 0.2]), 0, 20)
    with pytest.raises(ValueError, match="level"):
        nadeau_bengio_ttest(np.array([0.1, 0.2]), 80, 20, level=1.0)
