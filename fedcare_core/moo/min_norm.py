"""Min-norm (MGDA) weights on a Gram matrix: ``argmin_{λ ∈ simplex} ‖Σ_s λ_s g_s‖²``.

Everything here works on the S×S Gram matrix ``G[i, j] = <g_i, g_j>`` of the per-objective
gradients, never on the gradients themselves, so the cost does not depend on the model size.

Two solvers are offered (:data:`SOLVERS`):

``"exact"`` (the default)
    Closed forms for two and three objectives and Wolfe's minimum-norm-point algorithm for
    more. Tens of microseconds per call, so it can run every federated round and every
    Stage 2 step.
``"slsqp"``
    SciPy's SLSQP, as in the FedCARE paper; kept as the paper-faithful reference.

Both return weights on the probability simplex (``λ ≥ 0``, ``Σ λ = 1``) and the attained squared
norm ``λᵀ G λ``, so each round can log λ*.

References
----------
.. [1] P. Wolfe, "Finding the nearest point in a polytope", Mathematical Programming 11,
   128–149 (1976).
.. [2] O. Sener and V. Koltun, "Multi-Task Learning as Multi-Objective Optimization",
   NeurIPS 2018 (MGDA-UB); reference code ``min_norm_solvers.py`` at
   https://github.com/isl-org/MultiObjectiveOptimization.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg.lapack import dgesv

from fedcare_core.errors import ConfigError

#: Solver names accepted by :func:`min_norm_weights`.
SOLVERS = ("exact", "slsqp")

#: Bound on Wolfe's major cycles (each adds one gradient to the active set) and on SLSQP's
#: iterations. Wolfe needs at most a few times S major cycles in practice; SLSQP about 2 S.
DEFAULT_MAX_ITER = 100

#: Relative tolerance on the objective. Wolfe (``"exact"``, S > 3) stops once half the
#: Frank–Wolfe duality gap, ``λᵀGλ − min_j (Gλ)_j`` (which bounds the excess squared norm), is
#: below ``tol × λᵀGλ`` plus the rounding error of those inner products; ``"slsqp"`` uses it as
#: ``ftol`` on the Gram matrix scaled to unit largest diagonal.
_DEFAULT_TOL = 1e-15

_EPS = float(np.finfo(np.float64).eps)
# Relative resolution of Gram entries for the closed forms: differences of entries below this
# fraction of their magnitude are rounding, e.g. ‖g_1 − g_2‖² of two equal gradients.
_ROUNDOFF = 32.0 * _EPS
# A Gram whose largest diagonal is below this holds only (numerically) zero gradients.
_TINY = float(np.finfo(np.float64).tiny)
# An affine-minimiser solve whose coefficients exceed this is treated as singular and redone by
# least squares: the active set is (nearly) affinely dependent, e.g. duplicate gradients.
_ALPHA_MAX = 1e12


def min_norm_weights(
    gram: np.ndarray,
    method: str = "exact",
    *,
    max_iter: int = DEFAULT_MAX_ITER,
    tol: float = _DEFAULT_TOL,
) -> tuple[np.ndarray, float]:
    """Find the convex combination of gradients with the smallest norm (MGDA, eq. 9 and 14).

    Solves ``min_{λ ≥ 0, Σλ = 1} λᵀ G λ``. The minimiser ``d = Σ_s λ_s g_s`` is the common
    descent direction of all objectives, or zero at a Pareto-stationary point.

    Parameters
    ----------
    gram
        S×S symmetric positive semi-definite Gram matrix, ``gram[i, j] = <g_i, g_j>``. Symmetry
        and semi-definiteness are assumed (only finiteness, shape and a non-negative diagonal are
        checked, to keep the per-call cost low).
    method
        ``"exact"``: closed forms for S ≤ 3, Wolfe's minimum-norm-point algorithm for S > 3.
        ``"slsqp"``: SciPy SLSQP from the uniform start, as in the paper.
    max_iter
        Bound on Wolfe's major cycles per start (``"exact"``, S > 3; at most two starts) or on
        SLSQP's iterations.
    tol
        Relative tolerance on the objective (see :data:`_DEFAULT_TOL`).

    Returns
    -------
    weights : numpy.ndarray
        λ*, float64 of length S, non-negative and summing to 1. When several λ attain the
        minimum (identical or zero gradients) one of them is returned; identical gradients
        throughout give uniform weights.
    min_sq_norm : float
        ``λ*ᵀ G λ*``, clamped at 0.

    Raises
    ------
    ConfigError
        If ``method`` is not one of :data:`SOLVERS` (a :class:`ValueError`).
    ValueError
        If ``gram`` is not a non-empty square matrix of finite numbers with a non-negative
        diagonal, or ``max_iter < 1`` or ``tol < 0``.

    Notes
    -----
    For S = 2 the minimiser is ``λ_1 = clip((G22 − G12) / (G11 + G22 − 2 G12), 0, 1)`` [2]_;
    for S = 3 it is the minimum-norm point of the plane through the three gradients when that
    lies inside the triangle, else the best of the three edges' closed forms.

    For S > 3, Wolfe's algorithm [1]_ keeps an active set (corral) of gradients whose affine
    hull's minimum-norm point lies inside their convex hull. A *major cycle* adds the gradient
    ``j`` minimising ``(Gλ)_j`` while it improves on ``λᵀGλ`` (otherwise the KKT conditions
    hold and λ is optimal); *minor cycles* solve the small KKT system of the affine minimiser,
    ``[[0, 1ᵀ], [1, G_CC]] [μ; α] = [1; 0]``, and, when some ``α_i ≤ 0``, step from λ towards
    α until a weight hits zero and drop that gradient. Here it first starts from the whole set
    with uniform weights (the optimum usually keeps most objectives, so one or two solves
    suffice); a (nearly) singular KKT system, from duplicate or affinely dependent gradients,
    is solved by least squares instead of failing, and if that run ends without the KKT
    certificate it is rerun from the smallest gradient alone, as in Wolfe's paper. Sener and
    Koltun [2]_ use the two-objective closed form and a Frank–Wolfe loop for more; their loop
    never advances its iteration counter, which is why every loop here is bounded.

    References
    ----------
    .. [1] P. Wolfe, "Finding the nearest point in a polytope", Math. Programming 11 (1976).
    .. [2] O. Sener and V. Koltun, "Multi-Task Learning as Multi-Objective Optimization",
       NeurIPS 2018.

    Examples
    --------
    >>> w, sq = min_norm_weights(np.array([[1.0, 0.0], [0.0, 4.0]]))
    >>> w.round(6).tolist(), round(sq, 6)
    ([0.8, 0.2], 0.8)
    """
    if method not in SOLVERS:
        raise ConfigError(
            f"unknown min-norm method {method!r}; expected one of {', '.join(SOLVERS)}"
        )
    if max_iter < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}")
    if not tol >= 0.0:
        raise ValueError(f"tol must be >= 0, got {tol}")
    g, rows, diag = _check_gram(gram)
    n = len(rows)
    if n == 1:
        return np.ones(1), diag[0]
    if method == "exact" and n == 2:
        return _two_objectives(rows)
    if method == "exact" and n == 3:
        return _three_objectives(rows)
    scale = max(diag)
    if scale <= _TINY:
        # All gradients are zero: every λ is optimal; uniform weights favour no objective.
        return np.full(n, 1.0 / n), 0.0
    if method == "exact":
        return _wolfe(g, rows, diag, scale, max_iter, tol)
    weights = _slsqp(g, 1.0 / scale, max_iter, tol)
    sq = float(weights @ g @ weights)
    return weights, sq if sq > 0.0 else 0.0


def _check_gram(gram: np.ndarray) -> tuple[np.ndarray, list[list[float]], list[float]]:
    """Check ``gram`` is a usable Gram matrix; return it as float64, nested lists and diagonal.

    For a handful of objectives plain Python floats are cheaper than NumPy calls, so the
    solvers read the entries from the nested lists.
    """
    g = np.asarray(gram, dtype=np.float64)
    if g.ndim != 2 or g.shape[0] != g.shape[1] or g.shape[0] == 0:
        raise ValueError(f"gram must be a non-empty square matrix, got shape {g.shape}")
    rows: list[list[float]] = g.tolist()
    # A finite sum proves every entry finite; an infinite one may be overflow, so look closer.
    if not math.isfinite(sum(map(sum, rows))) and not np.isfinite(g).all():
        raise ValueError("gram contains NaN or infinite entries")
    diag = [row[i] for i, row in enumerate(rows)]
    if min(diag) < 0.0:
        raise ValueError("gram has a negative diagonal entry; it is not a Gram matrix")
    return g, rows, diag


def _two_objectives(rows: list[list[float]]) -> tuple[np.ndarray, float]:
    """Closed form for S = 2: minimise ``‖λ g_1 + (1 − λ) g_2‖²`` over ``λ ∈ [0, 1]``."""
    (g11, g12), (g21, g22) = rows
    g12 = 0.5 * (g12 + g21)
    lam, mu = _segment(g11, g12, g22)
    if lam <= 0.0:
        lam, mu = 0.0, 1.0
    elif mu <= 0.0:
        lam, mu = 1.0, 0.0
    sq = lam * lam * g11 + 2.0 * lam * mu * g12 + mu * mu * g22
    return np.array([lam, mu]), sq if sq > 0.0 else 0.0


def _three_objectives(rows: list[list[float]]) -> tuple[np.ndarray, float]:
    """Exact S = 3 solution in plain floats: the triangle's interior optimum or its best edge.

    The minimiser over the triangle is either the minimum-norm point of the plane through the
    three gradients, when that point lies inside the triangle, or the minimiser over one of the
    three edges (each a two-objective closed form). Three objectives is FedCARE's usual case,
    and this avoids any NumPy call beyond building the result.
    """
    g11, g22, g33 = rows[0][0], rows[1][1], rows[2][2]
    g12 = 0.5 * (rows[0][1] + rows[1][0])
    g13 = 0.5 * (rows[0][2] + rows[2][0])
    g23 = 0.5 * (rows[1][2] + rows[2][1])
    scale = max(g11, g22, g33)
    if max(abs(g11 - g13), abs(g33 - g13), abs(g22 - g23), abs(g33 - g23)) <= _ROUNDOFF * scale:
        # All three gradients equal to rounding: every λ is optimal; favour none.
        sq = (g11 + g22 + g33 + 2.0 * (g12 + g13 + g23)) / 9.0
        return np.full(3, 1.0 / 3.0), sq if sq > 0.0 else 0.0

    def value(a: float, b: float, c: float) -> float:
        return (
            a * a * g11
            + b * b * g22
            + c * c * g33
            + 2.0 * (a * b * g12 + a * c * g13 + b * c * g23)
        )

    # Edges (1, 2), (1, 3), (2, 3), each clipped to its segment.
    best: tuple[float, float, float] = (1.0, 0.0, 0.0)
    best_sq = math.inf
    for (gaa, gab, gbb), place in (
        ((g11, g12, g22), (0, 1)),
        ((g11, g13, g33), (0, 2)),
        ((g22, g23, g33), (1, 2)),
    ):
        t, u = _segment(gaa, gab, gbb)
        if t <= 0.0:
            t, u = 0.0, 1.0
        elif u <= 0.0:
            t, u = 1.0, 0.0
        sq = t * t * gaa + 2.0 * t * u * gab + u * u * gbb
        if sq < best_sq:
            lam = [0.0, 0.0, 0.0]
            lam[place[0]], lam[place[1]] = t, u
            best, best_sq = (lam[0], lam[1], lam[2]), sq

    # Plane through the gradients, based at the smallest one k (basing it at a much larger
    # gradient would lose the small one to cancellation): x = g_k + a (g_i − g_k) + b (g_j − g_k).
    k = 0 if g11 <= g22 and g11 <= g33 else (1 if g22 <= g33 else 2)
    i, j = (1, 2) if k == 0 else ((0, 2) if k == 1 else (0, 1))
    gram = ((g11, g12, g13), (g12, g22, g23), (g13, g23, g33))
    gii, gjj, gkk = gram[i][i], gram[j][j], gram[k][k]
    gij, gik, gjk = gram[i][j], gram[i][k], gram[j][k]
    uu = gii - 2.0 * gik + gkk
    uv = gij - gik - gjk + gkk
    vv = gjj - 2.0 * gjk + gkk
    det = uu * vv - uv * uv
    # Rounding bound on det from the magnitudes entering uu, uv and vv: below it the three
    # gradients are collinear to working precision and the optimum lies on an edge.
    e_uu = gii + 2.0 * abs(gik) + gkk
    e_vv = gjj + 2.0 * abs(gjk) + gkk
    e_uv = abs(gij) + abs(gik) + abs(gjk) + gkk
    if det > _ROUNDOFF * (e_uu * abs(vv) + abs(uu) * e_vv + 2.0 * abs(uv) * e_uv):
        ru = gkk - gik
        rv = gkk - gjk
        a = (ru * vv - rv * uv) / det
        b = (rv * uu - ru * uv) / det
        c = 1.0 - a - b
        if a > 0.0 and b > 0.0 and c > 0.0:
            lam = [0.0, 0.0, 0.0]
            lam[i], lam[j], lam[k] = a, b, c
            sq = value(lam[0], lam[1], lam[2])
            if sq <= best_sq:
                best, best_sq = (lam[0], lam[1], lam[2]), sq
    return np.array(best), best_sq if best_sq > 0.0 else 0.0


def _segment(g11: float, g12: float, g22: float) -> tuple[float, float]:
    """Minimiser ``(t, 1 − t)`` of ``‖t g_1 + (1 − t) g_2‖²`` over the whole line (t unclipped).

    ``t = (g22 − g12) / ‖g_1 − g_2‖²``. Gradients equal to rounding give ``(0.5, 0.5)``, which
    favours neither. A difference norm lost to rounding while the two gradients still differ
    (``g11 ≠ g22``, say near-duplicates with different norms) makes the squared norm linear
    along the line, so the smaller gradient's vertex is returned.
    """
    d1 = g11 - g12
    d2 = g22 - g12
    resolution = _ROUNDOFF * (g11 + g22)
    if abs(d1) <= resolution and abs(d2) <= resolution:
        return 0.5, 0.5
    denom = d1 + d2  # ‖g_1 − g_2‖²
    if denom > 0.0:
        # Not 1 − t: when t ≈ 1 that would lose the small weight's digits, which matter
        # when they multiply a much larger gradient.
        return d2 / denom, d1 / denom
    return (1.0, 0.0) if g11 < g22 else (0.0, 1.0)


def _affine_minimiser(
    kkt: np.ndarray, rhs: np.ndarray, rows: list[list[float]], corral: list[int]
) -> list[float]:
    """Coefficients α (Σα = 1) of the minimum-norm point of the corral's affine hull.

    ``kkt`` is the bordered matrix ``[[0, c 1ᵀ], [c 1, G]]`` of the whole Gram and ``rhs`` is
    ``[c, 0, …, 0]``, with ``c`` the largest diagonal entry of ``G``: a scalar multiple of the
    system with the Gram scaled to unit diagonal, so its conditioning does not depend on the
    gradients' magnitude. The corral's block is solved with LAPACK ``gesv`` (cheap for a
    handful of objectives), and by least squares when it is singular, which happens with
    affinely dependent gradients (duplicates, collinear ones).
    """
    n = len(corral) + 1
    if n == 2:
        return [1.0]
    if n == 3:
        # Two gradients a, b: the closed form of the line through them.
        a, b = corral
        return list(_segment(rows[a][a], rows[a][b], rows[b][b]))
    if n == kkt.shape[0] and _in_order(corral):
        block = kkt  # the whole set, in index order: no copy needed
    else:
        # α is ordered as the corral is, which after drops and re-entries need not be the
        # index order, even when the corral holds every gradient.
        idx = [0, *(c + 1 for c in corral)]
        block = kkt.take(idx, 0).take(idx, 1)
        rhs = rhs[:n]
    _, _, sol, info = dgesv(block, rhs)
    alpha: list[float] = sol[1:].tolist()
    if info != 0 or not max(map(abs, alpha)) < _ALPHA_MAX:
        alpha = np.linalg.lstsq(block, rhs, rcond=None)[0][1:].tolist()
    return alpha


def _in_order(corral: list[int]) -> bool:
    """Whether ``corral`` is ``[0, 1, …, len − 1]``, so its weights index the Gram directly."""
    return all(c == i for i, c in enumerate(corral))


def _wolfe(
    g: np.ndarray,
    rows: list[list[float]],
    diag: list[float],
    scale: float,
    max_iter: int,
    tol: float,
) -> tuple[np.ndarray, float]:
    """Wolfe's minimum-norm-point algorithm; ``scale`` is the largest diagonal entry of ``g``.

    The first run starts from every gradient with uniform weights. If it ends without the
    optimality certificate, which only happens when rounding makes the whole set's KKT system
    unreliable (affinely dependent or nearly coincident gradients), a second run starts, as in
    Wolfe's paper, from the smallest gradient alone, adding gradients one at a time; the better
    of the two answers is kept.
    """
    n = len(rows)
    kkt = np.full((n + 1, n + 1), scale)
    kkt[0, 0] = 0.0
    kkt[1:, 1:] = g
    rhs = np.zeros(n + 1)
    rhs[0] = scale
    norms = list(map(math.sqrt, diag))

    corral, weights, sq, certified = _wolfe_run(
        g, rows, norms, kkt, rhs, list(range(n)), [1.0 / n] * n, max_iter, tol
    )
    if not certified:
        smallest = diag.index(min(diag))
        corral2, weights2, sq2, _ = _wolfe_run(
            g, rows, norms, kkt, rhs, [smallest], [1.0], max_iter, tol
        )
        if sq2 < sq:
            corral, weights, sq = corral2, weights2, sq2

    # Weights in the corral are positive by construction; renormalise away rounding in Σα.
    total = sum(weights)
    out = [0.0] * n
    for c, w in zip(corral, weights, strict=True):
        out[c] = w / total
    sq /= total * total
    return np.array(out), sq if sq > 0.0 else 0.0


def _wolfe_run(
    g: np.ndarray,
    rows: list[list[float]],
    norms: list[float],
    kkt: np.ndarray,
    rhs: np.ndarray,
    corral: list[int],
    weights: list[float],
    max_iter: int,
    tol: float,
) -> tuple[list[int], list[float], float, bool]:
    """One run of Wolfe's major and minor cycles from ``corral`` with positive ``weights``.

    Returns ``(corral, weights, λᵀGλ, certified)``; certified means the KKT conditions were
    verified to within ``tol`` and rounding.
    """
    n = len(rows)
    # Rounding bound factor of a length-n inner product (the gap test's floor below).
    rounding = (2 * n + 16) * _EPS
    added = -1  # gradient added by the last major cycle (-1: none)
    sq = 0.0
    for _ in range(max_iter):
        # Minor cycles: move to the corral's affine minimiser, dropping gradients whose weight
        # would turn negative. Each pass either ends the cycle or drops at least one gradient,
        # so the corral's size bounds the passes.
        stalled = False
        for _ in range(len(corral)):
            alpha = _affine_minimiser(kkt, rhs, rows, corral)
            if min(alpha) > 0.0:
                weights = alpha
                break
            # Step from λ towards α until the first weight reaches zero (θ ≤ 1, as some α_i ≤ 0
            # while every λ_i ≥ 0).
            theta, block = math.inf, 0
            for i, (w, a) in enumerate(zip(weights, alpha, strict=True)):
                if a <= 0.0:
                    t = w / (w - a) if w > a else 0.0
                    if t < theta:
                        theta, block = t, i
            # Only the gradient just added has zero weight, so θ = 0 means it cannot enter with
            # positive weight: λ is optimal up to rounding.
            stalled = theta <= 0.0 and corral[block] == added
            weights = [w + theta * (a - w) for w, a in zip(weights, alpha, strict=True)]
            weights[block] = 0.0
            keep = [i for i, w in enumerate(weights) if w > 0.0]
            corral = [corral[i] for i in keep]
            weights = [weights[i] for i in keep]
            if stalled:
                break
        # Major cycle: λ is optimal iff (Gλ)_j ≥ λᵀGλ for every j (the KKT conditions;
        # λᵀGλ − min_j (Gλ)_j is half the Frank–Wolfe duality gap). Otherwise add the most
        # violating gradient.
        # (Gλ)_j for every j, with the weights mapped through the corral's indices.
        if len(corral) == n and _in_order(corral):
            glam: list[float] = np.dot(weights, g).tolist()
        else:
            glam = np.dot(weights, g.take(corral, 0)).tolist()
        sq = m = 0.0
        for w, c in zip(weights, corral, strict=True):
            sq += w * glam[c]
            m += w * norms[c]
        low = min(glam)
        j = glam.index(low)
        # Gaps below the rounding error of (Gλ)_j and λᵀGλ, which scales with m = Σ λ_c ‖g_c‖
        # and ‖g_j‖ (not with the largest gradient, so that a tiny gradient's optimum is still
        # resolved next to huge ones), are noise.
        if sq - low <= tol * sq + rounding * m * (m + norms[j]):
            return corral, weights, sq, True
        if stalled or j in corral:
            # The violating gradient cannot enter (rounding): best effort, uncertified.
            break
        corral.append(j)
        weights.append(0.0)
        added = j
    return corral, weights, sq, False


def _slsqp(g: np.ndarray, inv_scale: float, max_iter: int, tol: float) -> np.ndarray:
    """SciPy SLSQP from the uniform start (paper-faithful), projected back onto the simplex."""
    from scipy.optimize import minimize

    n = g.shape[0]
    # Scaling by a positive constant leaves the minimiser unchanged and makes ``ftol``
    # meaningful whatever the gradients' magnitude; symmetrising keeps 2Gλ the exact gradient.
    gs = (g + g.T) * (0.5 * inv_scale)
    ones = np.ones(n)
    result = minimize(
        lambda x: float(x @ gs @ x),
        np.full(n, 1.0 / n),
        jac=lambda x: 2.0 * (gs @ x),
        method="SLSQP",
        bounds=[(0.0, 1.0)] * n,
        constraints=({"type": "eq", "fun": lambda x: x.sum() - 1.0, "jac": lambda x: ones},),
        options={"ftol": tol, "maxiter": max_iter},
    )
    # SLSQP honours the constraints only to its own tolerance: clip and renormalise.
    weights = np.clip(np.asarray(result.x, dtype=np.float64), 0.0, None)
    total = weights.sum()
    if not (np.isfinite(total) and total > 0.0):
        return np.full(n, 1.0 / n)
    return weights / total
