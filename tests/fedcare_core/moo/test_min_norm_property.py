"""Property test of the min-norm solver against brute-force enumeration of active sets.

The optimum of ``min_{λ ∈ simplex} λᵀGλ`` is the affine minimiser of its own support, so
enumerating every support (2^S − 1 of them) and keeping those whose affine minimiser lies in
the simplex finds it. Thousands of Grams (S = 2…10: random, shuffled, with duplicated
gradients, rank-deficient, Gram scales from 1e-12 to 1e8) are checked on the *weights* the
solver returns, not only on the value it reports: λᵀGλ of the returned weights is the optimum,
the weights are the unique minimiser where it is unique, and permuting the objectives permutes
the weights.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np
import pytest

from fedcare_core.moo import min_norm_weights

pytestmark = pytest.mark.filterwarnings("error")

KINDS = ("random", "duplicated", "rank_deficient", "spread")
GRAMS_PER_SIZE_AND_KIND = 100  # 9 sizes × 4 kinds × 100 = 3,600 Grams, each also permuted


def brute_force(gram: np.ndarray) -> tuple[float, np.ndarray]:
    """Best feasible affine minimiser over every support; returns (value, weights).

    Supports of one size are solved together with a stacked pseudo-inverse, which also copes
    with affinely dependent supports (their candidates are still points of the simplex).
    """
    s = gram.shape[0]
    scale = float(np.diag(gram).max())
    if scale == 0.0:
        return 0.0, np.full(s, 1.0 / s)
    g = gram / scale
    best, best_lam = np.inf, np.full(s, 1.0 / s)
    for k in range(1, s + 1):
        subsets = np.array(list(itertools.combinations(range(s), k)))
        kkt = np.zeros((len(subsets), k + 1, k + 1))
        kkt[:, 0, 1:] = kkt[:, 1:, 0] = 1.0
        kkt[:, 1:, 1:] = g[subsets[:, :, None], subsets[:, None, :]]
        alpha = np.linalg.pinv(kkt)[:, 1:, 0]
        feasible = (alpha >= 0.0).all(axis=1) & (alpha.sum(axis=1) > 0.5)
        for subset, a in zip(subsets[feasible], alpha[feasible], strict=True):
            lam = np.zeros(s)
            lam[subset] = a / a.sum()
            value = float(lam @ g @ lam)
            if value < best:
                best, best_lam = value, lam
    return best * scale, best_lam


def gradients(rng: np.random.Generator, s: int, kind: str) -> np.ndarray:
    """S gradients of one kind; their squared norms span 1e-12 … 1e8 across the test."""
    if kind == "random":
        a = rng.normal(size=(s, int(rng.integers(s, 3 * s + 1))))
    elif kind == "duplicated":
        a = rng.normal(size=(s, 2 * s))
        for _ in range(int(rng.integers(1, max(2, s // 2) + 1))):
            a[rng.integers(s)] = a[rng.integers(s)]
    elif kind == "rank_deficient":
        a = rng.normal(size=(s, int(rng.integers(1, max(2, s - 1)))))
    else:  # spread: norms over up to ten orders of magnitude
        a = rng.normal(size=(s, 2 * s)) * 10.0 ** rng.uniform(-6.0, 4.0, size=(s, 1))
        return a
    return a * 10.0 ** rng.uniform(-6.0, 4.0)


def cases() -> Iterator[tuple[int, str, int]]:
    for s in range(2, 11):
        for kind in KINDS:
            yield s, kind, GRAMS_PER_SIZE_AND_KIND


def rounding_level(gram: np.ndarray, *weights: np.ndarray) -> float:
    """Absolute rounding level of λᵀGλ: eps-scale multiples of (Σ λ_s ‖g_s‖)²."""
    norms = np.sqrt(np.clip(np.diag(gram), 0.0, None))
    m = max(float(w @ norms) for w in weights)
    return 1e-12 * m * m


def curvature(gram: np.ndarray) -> float:
    """Smallest eigenvalue of G on the simplex's directions (Σ v = 0): > 0 iff λ* is unique."""
    s = gram.shape[0]
    basis = np.linalg.qr(np.eye(s) - 1.0 / s, mode="reduced")[0][:, : s - 1]
    return float(np.linalg.eigvalsh(basis.T @ gram @ basis).min())


def check_weights(gram: np.ndarray, best: float, best_w: np.ndarray, unique: bool) -> np.ndarray:
    """Assert the solver's weights on ``gram`` attain ``best`` (and are ``best_w`` if unique)."""
    s = gram.shape[0]
    w, sq = min_norm_weights(gram)
    assert w.shape == (s,) and (w >= 0.0).all()
    assert w.sum() == pytest.approx(1.0, abs=1e-12)
    attained = float(w @ gram @ w)
    level = rounding_level(gram, w, best_w)
    # The weights attain the optimum, and the reported value is theirs.
    assert attained <= best + 1e-9 * abs(best) + level, (attained, best)
    assert sq == pytest.approx(max(attained, 0.0), rel=1e-9, abs=level)
    if unique:
        np.testing.assert_allclose(w, best_w, atol=1e-6)
    return w


@pytest.mark.parametrize(("s", "kind", "count"), list(cases()))
def test_weights_match_brute_force_and_permute_with_the_objectives(
    s: int, kind: str, count: int
) -> None:
    rng = np.random.default_rng(1000 * s + KINDS.index(kind))
    for _ in range(count):
        a = gradients(rng, s, kind)
        gram = a @ a.T
        best, best_w = brute_force(gram)
        # Strong convexity on the simplex bounds the distance to the unique minimiser.
        unique = curvature(gram) > 1e-6 * float(np.diag(gram).max())
        w = check_weights(gram, best, best_w, unique)
        perm = rng.permutation(s)
        w_perm = check_weights(gram[np.ix_(perm, perm)], best, best_w[perm], unique)
        if unique:
            np.testing.assert_allclose(w_perm, w[perm], atol=1e-6)


def test_corral_holding_every_objective_out_of_order() -> None:
    # Found on this machine: Wolfe's corral ends holding all five objectives in another order
    # than the Gram's; the weights must still be mapped through the corral's indices.
    rng = np.random.default_rng(0)
    for _ in range(200):
        s = int(rng.integers(4, 9))
        a = rng.normal(size=(s, 2 * s)) * 10.0 ** rng.uniform(-2, 2, size=(s, 1))
        gram = a @ a.T
        w, sq = min_norm_weights(gram)
        assert float(w @ gram @ w) == pytest.approx(sq, rel=1e-9, abs=1e-12 * gram.max())
