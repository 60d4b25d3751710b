"""The Nadeau–Bengio corrected resampled paired t-test, reported beside the Wilcoxon test.

When two methods are compared over ``J`` resampled train/test splits (repeated cross-validation
or repeated hold-out), the splits share training rows, so the per-split differences are
correlated and the plain paired t-test's variance ``s² / J`` is too small: it rejects far too
often. Nadeau and Bengio replace it by ``(1/J + n_test/n_train) s²``.

References: C. Nadeau and Y. Bengio, "Inference for the generalization error", Machine Learning
52(3), 2003; R. Bouckaert and E. Frank, "Evaluating the replicability of significance tests for
comparing learning algorithms", PAKDD 2004 (the corrected repeated k-fold test, ``J = r k``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class CorrectedTTest:
    """The corrected t statistic, its two-sided p-value and an interval of the mean difference.

    ``dof`` is ``J - 1``; ``std_error`` is the corrected standard error of the mean.
    """

    mean: float
    std_error: float
    t: float
    p: float
    low: float
    high: float
    dof: int
    level: float


def nadeau_bengio_ttest(
    diffs: np.ndarray, n_train: int, n_test: int, *, level: float = 0.95
) -> CorrectedTTest:
    """Corrected resampled paired t-test of the mean of per-split differences.

    Parameters
    ----------
    diffs : ndarray, shape (J,)
        One difference per split (method A's metric minus method B's), ``J >= 2``; NaN skipped.
    n_train, n_test : int
        Rows used to train and to test in each split (their ratio enters the correction).
    level : float
        Coverage of the interval of the mean difference.

    Returns
    -------
    CorrectedTTest
        ``t = mean / sqrt((1/J + n_test/n_train) s²)`` with ``s²`` the sample variance
        (``ddof=1``), ``p`` two-sided from Student's t with ``J - 1`` degrees of freedom, and
        ``mean ± t_{(1+level)/2, J-1} · std_error``. When every difference is equal the test is
        degenerate: ``t`` is 0 with ``p = 1`` if they are all 0, else ``±inf`` with ``p = 0``.

    Raises
    ------
    ValueError
        With fewer than two differences, non-positive sizes or ``level`` outside (0, 1).
    """
    from scipy.stats import t as student_t

    d = np.asarray(diffs, dtype=np.float64).ravel()
    d = d[~np.isnan(d)]
    j = len(d)
    if j < 2:
        raise ValueError(f"the corrected t-test needs at least 2 differences, got {j}")
    if n_train <= 0 or n_test <= 0:
        raise ValueError(f"n_train and n_test must be positive, got {n_train} and {n_test}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    mean = float(d.mean())
    std_error = math.sqrt((1.0 / j + n_test / n_train) * float(d.var(ddof=1)))
    dof = j - 1
    if std_error == 0.0:
        t = 0.0 if mean == 0.0 else math.copysign(math.inf, mean)
        p = 1.0 if mean == 0.0 else 0.0
    else:
        t = mean / std_error
        p = float(2.0 * student_t.sf(abs(t), dof))
    half = float(student_t.ppf((1.0 + level) / 2.0, dof)) * std_error
    return CorrectedTTest(mean, std_error, t, p, mean - half, mean + half, dof, level)
