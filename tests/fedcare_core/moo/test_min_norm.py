"""Tests of the min-norm (MGDA) solver: closed forms, optimality, agreement, degenerate input."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fedcare_core.errors import ConfigError
from fedcare_core.moo import SOLVERS, min_norm_weights
from fedcare_core.moo.min_norm import DEFAULT_MAX_ITER

# Every test here fails on any warning (NaN arithmetic, SLSQP complaints, LinAlg warnings).
pytestmark = pytest.mark.filterwarnings("error")

# SLSQP stops on its objective (ftol), so its weights are only accurate to about sqrt(ftol).
WEIGHT_ATOL = {"exact": 1e-9, "slsqp": 1e-6}


def gram_of(*grads: list[float] | np.ndarray) -> np.ndarray:
    a = np.asarray(grads, dtype=np.float64)
    return a @ a.T


def assert_on_simplex(w: np.ndarray, s: int) -> None:
    assert w.dtype == np.float64
    assert w.shape == (s,)
    assert np.isfinite(w).all()
    assert (w >= 0.0).all()
    assert w.sum() == pytest.approx(1.0, abs=1e-12)


def brute_force(gram: np.ndarray) -> tuple[float, np.ndarray]:
    """Exhaustive reference: the best affine minimiser of any subset that lies in the simplex.

    The optimum is the affine minimiser of its own support, so enumerating all 2^S − 1 supports
    (least squares, so dependent subsets are fine) and keeping feasible ones finds it. Returns
    the value and its weights: the value carries the weights' own rounding (it can come out a
    few ulps below zero), so comparisons use :func:`rounding_level` of both weight vectors.
    """
    s = gram.shape[0]
    scale = float(np.diag(gram).max())
    if scale == 0.0:
        return 0.0, np.full(s, 1.0 / s)
    gram = gram / scale  # keeps lstsq's cut-off meaningful whatever the gradients' size
    best, best_lam = np.inf, np.full(s, 1.0 / s)
    for k in range(1, s + 1):
        for subset in itertools.combinations(range(s), k):
            idx = list(subset)
            kkt = np.zeros((k + 1, k + 1))
            kkt[0, 1:] = kkt[1:, 0] = 1.0
            kkt[1:, 1:] = gram[np.ix_(idx, idx)]
            rhs = np.zeros(k + 1)
            rhs[0] = 1.0
            alpha = np.linalg.lstsq(kkt, rhs, rcond=None)[0][1:]
            if alpha.min() >= -1e-9 and alpha.max() > 0.0:
                lam = np.zeros(s)
                lam[idx] = np.clip(alpha, 0.0, None)
                lam /= lam.sum()
                value = float(lam @ gram @ lam)
                if value < best:
                    best, best_lam = value, lam
    return best * scale, best_lam


def rounding_level(gram: np.ndarray, *weights: np.ndarray) -> float:
    """Absolute rounding level of λᵀGλ: eps-scale multiples of (Σ λ_s ‖g_s‖)²."""
    norms = np.sqrt(np.clip(np.diag(gram), 0.0, None))
    m = max(float(w @ norms) for w in weights)
    return 1e-13 * m * m


# --- closed-form cases, for both solvers --------------------------------------------------


@pytest.mark.parametrize("method", SOLVERS)
def test_two_orthogonal_gradients_of_norms_1_and_2(method: str) -> None:
    w, sq = min_norm_weights(gram_of([1.0, 0.0], [0.0, 2.0]), method)
    np.testing.assert_allclose(w, [0.8, 0.2], atol=WEIGHT_ATOL[method])
    assert sq == pytest.approx(0.8, rel=1e-9)


@pytest.mark.parametrize("method", SOLVERS)
def test_obtuse_pair(method: str) -> None:
    # g1 = (1, 0), g2 = (-1, 1): λ1 = (2 + 1) / (1 + 2 + 2) = 0.6, d = (0.2, 0.4).
    w, sq = min_norm_weights(gram_of([1.0, 0.0], [-1.0, 1.0]), method)
    np.testing.assert_allclose(w, [0.6, 0.4], atol=WEIGHT_ATOL[method])
    assert sq == pytest.approx(0.2, rel=1e-9)


@pytest.mark.parametrize("method", SOLVERS)
def test_opposite_gradients_reach_zero(method: str) -> None:
    # g and -2g: Pareto-stationary, the min-norm point is the origin at λ = (2/3, 1/3).
    w, sq = min_norm_weights(gram_of([1.0, 2.0], [-2.0, -4.0]), method)
    np.testing.assert_allclose(w, [2.0 / 3.0, 1.0 / 3.0], atol=WEIGHT_ATOL[method])
    assert sq == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("method", SOLVERS)
def test_dominating_gradient_gives_a_vertex(method: str) -> None:
    # <g1, g2> = 3 ≥ ‖g1‖² = 1, so moving from g1 towards g2 never shortens it.
    w, sq = min_norm_weights(gram_of([1.0, 0.0], [3.0, 1.0]), method)
    np.testing.assert_allclose(w, [1.0, 0.0], atol=WEIGHT_ATOL[method])
    assert sq == pytest.approx(1.0, rel=1e-9)
    w, sq = min_norm_weights(gram_of([3.0, 1.0], [1.0, 0.0]), method)
    np.testing.assert_allclose(w, [0.0, 1.0], atol=WEIGHT_ATOL[method])


@pytest.mark.parametrize("method", SOLVERS)
@pytest.mark.parametrize("s", [3, 4, 5, 8])
def test_orthogonal_unit_gradients_give_uniform_weights(method: str, s: int) -> None:
    w, sq = min_norm_weights(np.eye(s), method)
    np.testing.assert_allclose(w, np.full(s, 1.0 / s), atol=WEIGHT_ATOL[method])
    assert sq == pytest.approx(1.0 / s, rel=1e-9)


@pytest.mark.parametrize("method", SOLVERS)
@pytest.mark.parametrize(
    "norms", [(1.0, 2.0, 3.0), (1.0, 2.0, 3.0, 0.5), (2.0, 1.0, 4.0, 3.0, 5.0)]
)
def test_orthogonal_gradients_weights_are_inverse_squared_norms(
    method: str, norms: tuple[float, ...]
) -> None:
    # Orthogonal g_s: λ_s ∝ 1/‖g_s‖², min ‖d‖² = 1 / Σ 1/‖g_s‖².
    inv = 1.0 / np.square(norms)
    w, sq = min_norm_weights(np.diag(np.square(norms)), method)
    np.testing.assert_allclose(w, inv / inv.sum(), atol=WEIGHT_ATOL[method])
    assert sq == pytest.approx(1.0 / inv.sum(), rel=1e-9)


@pytest.mark.parametrize("method", SOLVERS)
def test_solution_on_an_edge_ignores_useless_gradients(method: str) -> None:
    # The obtuse pair's optimum d = (0.2, 0.4, 0) has <d, g3> = 3 and <d, g4> = 0.6, both ≥ 0.2.
    g = gram_of([1.0, 0.0, 0.0], [-1.0, 1.0, 0.0], [5.0, 5.0, 0.0], [3.0, 0.0, 4.0])
    w, sq = min_norm_weights(g, method)
    np.testing.assert_allclose(w, [0.6, 0.4, 0.0, 0.0], atol=WEIGHT_ATOL[method])
    assert sq == pytest.approx(0.2, rel=1e-9)


@pytest.mark.parametrize("method", SOLVERS)
def test_single_objective(method: str) -> None:
    w, sq = min_norm_weights(np.array([[2.5]]), method)
    assert w.tolist() == [1.0]
    assert sq == 2.5


def test_accepts_array_likes_and_leaves_input_unchanged() -> None:
    g = [[1, 0], [0, 4]]
    w, _ = min_norm_weights(g)  # type: ignore[arg-type]
    np.testing.assert_allclose(w, [0.8, 0.2])
    arr = np.eye(4) * [1.0, 2.0, 3.0, 4.0]
    before = arr.copy()
    min_norm_weights(arr)
    np.testing.assert_array_equal(arr, before)


def test_docstring_example() -> None:
    w, sq = min_norm_weights(np.array([[1.0, 0.0], [0.0, 4.0]]))
    assert (w.round(6).tolist(), round(sq, 6)) == ([0.8, 0.2], 0.8)


# --- optimality and agreement on random problems --------------------------------------------


def random_gram(rng: np.random.Generator, s: int) -> np.ndarray:
    """Well-conditioned problem: S random gradients of dimension ≥ S (here 2S + 3)."""
    a = rng.normal(size=(s, 2 * s + 3))
    return a @ a.T


@pytest.mark.parametrize("s", [2, 3, 5, 8])
def test_exact_and_slsqp_agree_on_random_problems(s: int) -> None:
    rng = np.random.default_rng(100 + s)
    for _ in range(200):
        g = random_gram(rng, s)
        w_exact, sq_exact = min_norm_weights(g, "exact")
        w_slsqp, sq_slsqp = min_norm_weights(g, "slsqp")
        assert_on_simplex(w_exact, s)
        assert_on_simplex(w_slsqp, s)
        assert sq_exact == pytest.approx(sq_slsqp, rel=1e-9)
        assert sq_exact == pytest.approx(float(w_exact @ g @ w_exact), rel=1e-12)


@pytest.mark.parametrize("s", [3, 4, 5, 8, 12])
def test_exact_solution_satisfies_kkt(s: int) -> None:
    # λ is optimal iff (Gλ)_j ≥ λᵀGλ for every j, with equality where λ_j > 0.
    rng = np.random.default_rng(7 + s)
    for _ in range(100):
        g = random_gram(rng, s)
        w, sq = min_norm_weights(g)
        glam = g @ w
        tol = 1e-12 * np.diag(g).max()
        assert (glam >= sq - tol).all()
        np.testing.assert_allclose(glam[w > 1e-9], sq, atol=tol)


@pytest.mark.parametrize("s", [3, 4, 5, 6])
def test_exact_matches_exhaustive_search(s: int) -> None:
    # Correlated, anti-correlated, low-rank and integer gradients, against the 2^S oracle.
    rng = np.random.default_rng(11 * s)
    for trial in range(60):
        kind = trial % 4
        if kind == 0:
            a = rng.normal(size=(1, 3 * s)) + 0.3 * rng.normal(size=(s, 3 * s))
        elif kind == 1:
            v = rng.normal(size=(1, 3 * s))
            a = np.vstack([v, -rng.uniform(0.5, 2.0) * v, rng.normal(size=(s - 2, 3 * s))])
        elif kind == 2:
            a = rng.normal(size=(s, int(rng.integers(1, s))))
        else:
            a = rng.integers(-2, 3, size=(s, int(rng.integers(1, 4)))).astype(float)
        g = a @ a.T
        w, sq = min_norm_weights(g)
        assert_on_simplex(w, s)
        best, best_w = brute_force(g)
        assert sq <= best + 1e-12 * max(best, 0.0) + rounding_level(g, w, best_w)


# --- degenerate input -----------------------------------------------------------------------


@pytest.mark.parametrize("method", SOLVERS)
@pytest.mark.parametrize("s", [2, 3, 5])
def test_all_zero_gram_gives_uniform_weights(method: str, s: int) -> None:
    w, sq = min_norm_weights(np.zeros((s, s)), method)
    np.testing.assert_allclose(w, np.full(s, 1.0 / s))
    assert sq == 0.0


@pytest.mark.parametrize("method", SOLVERS)
@pytest.mark.parametrize("s", [2, 3, 4, 6])
def test_identical_gradients_give_uniform_weights(method: str, s: int) -> None:
    g = gram_of(*([[0.3, -1.2, 2.0]] * s))
    w, sq = min_norm_weights(g, method)
    assert_on_simplex(w, s)
    assert sq == pytest.approx(g[0, 0], rel=1e-9)
    if method == "exact":
        np.testing.assert_allclose(w, np.full(s, 1.0 / s), atol=1e-12)


@pytest.mark.parametrize("method", SOLVERS)
@pytest.mark.parametrize("s", [3, 4, 6])
def test_duplicate_gradients_among_others(method: str, s: int) -> None:
    rng = np.random.default_rng(s)
    for _ in range(20):
        a = rng.normal(size=(s, 2 * s))
        a[1] = a[0]
        a[-1] = a[0]
        g = a @ a.T
        w, sq = min_norm_weights(g, method)
        assert_on_simplex(w, s)
        if method == "exact":
            best, best_w = brute_force(g)
            assert sq <= best + rounding_level(g, w, best_w)


@pytest.mark.parametrize("method", SOLVERS)
def test_rank_one_gram(method: str) -> None:
    v = np.array([1.0, -2.0, 0.5])
    # Same direction, different lengths: all weight on the shortest.
    w, sq = min_norm_weights(gram_of(2.0 * v, 0.5 * v, 3.0 * v, 1.0 * v), method)
    np.testing.assert_allclose(w, [0.0, 1.0, 0.0, 0.0], atol=WEIGHT_ATOL[method])
    assert sq == pytest.approx(0.25 * float(v @ v), rel=1e-9)
    # Opposite directions: the origin is reachable.
    w, sq = min_norm_weights(gram_of(2.0 * v, -1.0 * v, 3.0 * v), method)
    assert_on_simplex(w, 3)
    assert sq == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("method", SOLVERS)
@pytest.mark.parametrize("s", [2, 3, 4, 6])
def test_zero_gradient_takes_all_the_weight(method: str, s: int) -> None:
    rng = np.random.default_rng(3 * s)
    a = rng.normal(size=(s, 5))
    a[s // 2] = 0.0
    w, sq = min_norm_weights(a @ a.T, method)
    assert_on_simplex(w, s)
    assert sq == pytest.approx(0.0, abs=1e-12)
    if method == "exact":
        assert w[s // 2] == 1.0
        assert sq == 0.0


@pytest.mark.parametrize("method", SOLVERS)
@pytest.mark.parametrize("s", [2, 3, 5])
def test_huge_scale_differences(method: str, s: int) -> None:
    # Norms 1e-8 and 1e8 (Gram entries from 1e-16 to 1e16): the tiny gradient dominates.
    rng = np.random.default_rng(s)
    a = rng.normal(size=(s, 2 * s))
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    a[0] *= 1e-8
    a[1:] *= 1e8
    g = a @ a.T
    w, sq = min_norm_weights(g, method)
    assert_on_simplex(w, s)
    assert np.isfinite(sq)
    assert w[0] > 1.0 - 1e-6
    if method == "exact":
        # Never worse than the tiny gradient alone.
        assert 0.0 <= sq <= g[0, 0] * (1.0 + 1e-9)


@pytest.mark.parametrize("s", [4, 6, 8])
def test_huge_scale_differences_match_exhaustive_search(s: int) -> None:
    rng = np.random.default_rng(50 + s)
    for _ in range(20):
        a = rng.normal(size=(s, 2 * s)) * 10.0 ** rng.uniform(-8.0, 8.0, size=(s, 1))
        g = a @ a.T
        w, sq = min_norm_weights(g)
        assert_on_simplex(w, s)
        best, best_w = brute_force(g)
        assert sq <= max(best, 0.0) + rounding_level(g, w, best_w)


def test_near_duplicate_gradients_pick_the_shortest() -> None:
    # Five gradients equal to 1e-7 relative: still resolved to the best vertex, not spread.
    rng = np.random.default_rng(0)
    base = np.array([[1.5]])
    a = base + 1e-7 * rng.normal(size=(5, 1))
    g = a @ a.T
    w, sq = min_norm_weights(g)
    assert w[int(np.argmin(np.abs(a[:, 0])))] == pytest.approx(1.0, abs=1e-12)
    assert sq == pytest.approx(float(np.min(a**2)), rel=1e-15)


def test_difference_lost_to_rounding_picks_the_smaller_vertex() -> None:
    # ‖g1 − g2‖² computes to 0 although the norms differ by 2e-9: the squared norm is linear
    # along the segment (within rounding), so its smaller end wins.
    d = 1e-9
    g = np.array([[1.0, 1.0 + d], [1.0 + d, 1.0 + 2.0 * d]])
    w, sq = min_norm_weights(g)
    np.testing.assert_array_equal(w, [1.0, 0.0])
    assert sq == 1.0
    w, _ = min_norm_weights(g[::-1, ::-1])
    np.testing.assert_array_equal(w, [0.0, 1.0])


def test_bounded_iterations_still_return_simplex_weights() -> None:
    # Gradients of very different sizes defeat the whole-set start, so Wolfe adds gradients one
    # major cycle at a time; capped at one cycle it stops early with a valid, worse weighting.
    rng = np.random.default_rng(9)
    a = rng.normal(size=(6, 12)) * 10.0 ** rng.uniform(-4.0, 4.0, size=(6, 1))
    g = a @ a.T
    w, sq = min_norm_weights(g, max_iter=1)
    assert_on_simplex(w, 6)
    w_full, sq_full = min_norm_weights(g)
    assert sq_full < sq * (1.0 - 1e-3)
    assert (w_full > 0).sum() > (w > 0).sum()
    assert DEFAULT_MAX_ITER >= 10


def test_larger_problems_agree_with_slsqp() -> None:
    rng = np.random.default_rng(5)
    for s in (12, 20):
        for _ in range(10):
            g = random_gram(rng, s)
            _, sq_exact = min_norm_weights(g)
            _, sq_slsqp = min_norm_weights(g, "slsqp")
            assert sq_exact <= sq_slsqp * (1.0 + 1e-9)


# --- invalid input --------------------------------------------------------------------------


def test_unknown_method_lists_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="exact, slsqp") as info:
        min_norm_weights(np.eye(2), "frank-wolfe")
    assert isinstance(info.value, ConfigError)


@pytest.mark.parametrize(
    "gram",
    [
        np.ones((2, 3)),
        np.ones(3),
        np.ones((2, 2, 2)),
        np.zeros((0, 0)),
    ],
    ids=["non-square", "1-D", "3-D", "empty"],
)
def test_bad_shapes_raise(gram: np.ndarray) -> None:
    with pytest.raises(ValueError, match="square"):
        min_norm_weights(gram)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("method", SOLVERS)
def test_non_finite_entries_raise(bad: float, method: str) -> None:
    g = np.eye(3)
    g[1, 2] = g[2, 1] = bad
    with pytest.raises(ValueError, match="NaN or infinite"):
        min_norm_weights(g, method)


def test_huge_finite_entries_are_not_mistaken_for_infinite() -> None:
    # Their sum overflows, but every entry is finite.
    w, _ = min_norm_weights(np.diag([1e308, 1e308, 1.0, 1e308]))
    assert_on_simplex(w, 4)
    assert w[2] == pytest.approx(1.0)


def test_negative_diagonal_raises() -> None:
    with pytest.raises(ValueError, match="negative diagonal"):
        min_norm_weights(np.array([[1.0, 0.0], [0.0, -1.0]]))


def test_bad_iteration_settings_raise() -> None:
    with pytest.raises(ValueError, match="max_iter"):
        min_norm_weights(np.eye(3), max_iter=0)
    with pytest.raises(ValueError, match="tol"):
        min_norm_weights(np.eye(3), tol=-1.0)
    with pytest.raises(ValueError, match="tol"):
        min_norm_weights(np.eye(3), tol=float("nan"))
