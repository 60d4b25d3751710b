"""Gradient normalisation before the min-norm solve (MGDA-UB's ``gradient_normalizers``).

MGDA favours the objective with the smallest gradient, and FedCARE's objectives differ in scale
(Huber loss on log length of stay against weighted cross-entropy). Dividing each objective's
gradient ``g_s`` by a positive ``c_s`` before solving evens this out:

``"none"``
    ``c_s = 1``: the paper's formulation (eq. 9), the default.
``"l2"``
    ``c_s = ‖g_s‖``: every gradient has unit norm.
``"loss+"``
    ``c_s = loss_s · ‖g_s‖``, as in Sener and Koltun's MGDA-UB code.

The solve then runs on :func:`normalised_gram` and returns weights ``λ`` for the scaled
gradients ``g_s / c_s``; the update direction is ``Σ_s λ_s g_s / c_s``, i.e. raw gradient
``g_s`` has effective weight ``λ_s / c_s``.

References
----------
.. [1] O. Sener and V. Koltun, "Multi-Task Learning as Multi-Objective Optimization",
   NeurIPS 2018; ``gradient_normalizers`` in ``min_norm_solvers.py`` at
   https://github.com/isl-org/MultiObjectiveOptimization.
"""

from __future__ import annotations

import numpy as np

from fedcare_core.errors import ConfigError

#: Normalisation modes accepted by :func:`normalisation_divisors`.
NORMALISATIONS = ("none", "l2", "loss+")


def normalisation_divisors(
    sq_norms: np.ndarray, losses: np.ndarray | None, mode: str
) -> np.ndarray:
    """Per-objective divisors ``c_s`` for the gradients, by normalisation mode.

    Parameters
    ----------
    sq_norms
        Squared gradient norms ``‖g_s‖²`` (the Gram matrix's diagonal), length S.
    losses
        Per-objective loss values, length S. Needed only for ``"loss+"``; may be ``None``
        otherwise.
    mode
        One of :data:`NORMALISATIONS`.

    Returns
    -------
    numpy.ndarray
        float64 divisors of length S, all positive and finite: a divisor that would be zero,
        negative or not finite (a zero gradient, a zero or NaN loss) is replaced by 1, leaving
        that gradient unscaled rather than dividing by zero or flipping its sign.

    Raises
    ------
    ConfigError
        If ``mode`` is not one of :data:`NORMALISATIONS` (a :class:`ValueError`).
    ValueError
        If ``sq_norms`` is not 1-D, or ``losses`` is missing for ``"loss+"`` or does not have
        the same shape.
    """
    if mode not in NORMALISATIONS:
        raise ConfigError(
            f"unknown gradient normalisation {mode!r}; expected one of {', '.join(NORMALISATIONS)}"
        )
    sq = np.asarray(sq_norms, dtype=np.float64)
    if sq.ndim != 1:
        raise ValueError(f"sq_norms must be 1-D, got shape {sq.shape}")
    if mode == "none":
        return np.ones(sq.shape[0])
    # Squared norms slightly below zero are rounding; sqrt of a negative would be NaN.
    divisors = np.sqrt(np.maximum(sq, 0.0))
    if mode == "loss+":
        if losses is None:
            raise ValueError('mode "loss+" needs the per-objective losses')
        loss = np.asarray(losses, dtype=np.float64)
        if loss.shape != sq.shape:
            raise ValueError(f"losses has shape {loss.shape}, expected {sq.shape}")
        divisors = loss * divisors
    bad = ~(np.isfinite(divisors) & (divisors > 0.0))
    divisors[bad] = 1.0
    return divisors


def normalised_gram(gram: np.ndarray, divisors: np.ndarray) -> np.ndarray:
    """Gram matrix of the scaled gradients ``g_s / c_s``: ``G / outer(c, c)``.

    Parameters
    ----------
    gram
        S×S Gram matrix of the raw gradients.
    divisors
        Positive, finite ``c_s`` of length S, as from :func:`normalisation_divisors`.

    Returns
    -------
    numpy.ndarray
        The S×S float64 Gram matrix ``G[i, j] / (c_i c_j)``.

    Raises
    ------
    ValueError
        If ``gram`` is not square, ``divisors`` does not match it, or a divisor is not
        positive and finite.
    """
    g = np.asarray(gram, dtype=np.float64)
    c = np.asarray(divisors, dtype=np.float64)
    if g.ndim != 2 or g.shape[0] != g.shape[1]:
        raise ValueError(f"gram must be a square matrix, got shape {g.shape}")
    if c.shape != (g.shape[0],):
        raise ValueError(f"divisors has shape {c.shape}, expected ({g.shape[0]},)")
    if not (np.isfinite(c).all() and (c > 0.0).all()):
        raise ValueError("divisors must be positive and finite")
    return g / np.outer(c, c)
