"""Tests of gradient normalisation before the min-norm solve."""

from __future__ import annotations

import numpy as np
import pytest

import fedcare_core.moo as moo
from fedcare_core.errors import ConfigError
from fedcare_core.moo import (
    NORMALISATIONS,
    min_norm_weights,
    normalisation_divisors,
    normalised_gram,
)

pytestmark = pytest.mark.filterwarnings("error")


def test_modes_and_reexports() -> None:
    assert NORMALISATIONS == ("none", "l2", "loss+")
    assert set(moo.__all__) == {
        "NORMALISATIONS",
        "SOLVERS",
        "min_norm_weights",
        "normalisation_divisors",
        "normalised_gram",
    }


def test_none_divides_by_one() -> None:
    c = normalisation_divisors(np.array([4.0, 9.0, 0.0]), None, "none")
    assert c.dtype == np.float64
    np.testing.assert_array_equal(c, [1.0, 1.0, 1.0])


def test_l2_divides_by_the_norm() -> None:
    c = normalisation_divisors(np.array([4.0, 9.0, 0.25]), None, "l2")
    np.testing.assert_allclose(c, [2.0, 3.0, 0.5])


def test_loss_plus_divides_by_loss_times_norm() -> None:
    # MGDA-UB's "loss+": gn[t] = losses[t] * sqrt(sum of squared gradient entries).
    c = normalisation_divisors(np.array([4.0, 9.0]), np.array([0.5, 2.0]), "loss+")
    np.testing.assert_allclose(c, [1.0, 6.0])


@pytest.mark.parametrize(
    ("mode", "sq_norms", "losses", "expected"),
    [
        ("l2", [0.0, 4.0], None, [1.0, 2.0]),  # zero gradient
        ("l2", [-1e-20, 4.0], None, [1.0, 2.0]),  # rounding below zero
        ("l2", [np.inf, 4.0], None, [1.0, 2.0]),
        ("l2", [np.nan, 4.0], None, [1.0, 2.0]),
        ("loss+", [4.0, 4.0], [0.0, 1.0], [1.0, 2.0]),  # zero loss
        ("loss+", [4.0, 4.0], [np.nan, 1.0], [1.0, 2.0]),
        ("loss+", [4.0, 4.0], [np.inf, 1.0], [1.0, 2.0]),
        ("loss+", [4.0, 4.0], [-3.0, 1.0], [1.0, 2.0]),  # would flip the gradient
        ("loss+", [0.0, 4.0], [3.0, 1.0], [1.0, 2.0]),
    ],
)
def test_unusable_divisors_become_one(
    mode: str, sq_norms: list[float], losses: list[float] | None, expected: list[float]
) -> None:
    loss_arr = None if losses is None else np.array(losses)
    c = normalisation_divisors(np.array(sq_norms), loss_arr, mode)
    np.testing.assert_allclose(c, expected)
    assert np.isfinite(c).all() and (c > 0.0).all()


def test_unknown_mode_lists_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="none, l2, loss\\+") as info:
        normalisation_divisors(np.ones(2), np.ones(2), "loss")
    assert isinstance(info.value, ConfigError)


def test_loss_plus_needs_matching_losses() -> None:
    with pytest.raises(ValueError, match="losses"):
        normalisation_divisors(np.ones(2), None, "loss+")
    with pytest.raises(ValueError, match="shape"):
        normalisation_divisors(np.ones(2), np.ones(3), "loss+")


def test_sq_norms_must_be_a_vector() -> None:
    with pytest.raises(ValueError, match="1-D"):
        normalisation_divisors(np.ones((2, 2)), None, "l2")


def test_normalised_gram_is_the_gram_of_scaled_gradients() -> None:
    rng = np.random.default_rng(0)
    grads = rng.normal(size=(3, 7)) * np.array([[0.01], [1.0], [100.0]])
    gram = grads @ grads.T
    c = np.array([0.5, 2.0, 3.0])
    scaled = grads / c[:, None]
    np.testing.assert_allclose(normalised_gram(gram, c), scaled @ scaled.T, rtol=1e-12)


def test_l2_normalised_gram_has_unit_diagonal() -> None:
    rng = np.random.default_rng(1)
    grads = rng.normal(size=(4, 6)) * np.array([[1e-3], [1.0], [1e3], [5.0]])
    gram = grads @ grads.T
    g = normalised_gram(gram, normalisation_divisors(np.diag(gram), None, "l2"))
    np.testing.assert_allclose(np.diag(g), 1.0, rtol=1e-12)
    np.testing.assert_allclose(g, g.T)
    assert np.abs(g).max() <= 1.0 + 1e-12


def test_l2_normalisation_stops_the_smaller_gradient_dominating() -> None:
    # Orthogonal gradients of norms 1 and 10: raw MGDA gives the small one weight 100/101;
    # after l2 normalisation both unit gradients get 1/2.
    gram = np.diag([1.0, 100.0])
    w_raw, _ = min_norm_weights(gram)
    np.testing.assert_allclose(w_raw, [100 / 101, 1 / 101])
    c = normalisation_divisors(np.diag(gram), None, "l2")
    w_l2, sq = min_norm_weights(normalised_gram(gram, c))
    np.testing.assert_allclose(w_l2, [0.5, 0.5])
    assert sq == pytest.approx(0.5)


def test_none_leaves_the_gram_unchanged() -> None:
    gram = np.array([[2.0, 0.5], [0.5, 1.0]])
    c = normalisation_divisors(np.diag(gram), np.array([1.0, 2.0]), "none")
    np.testing.assert_array_equal(normalised_gram(gram, c), gram)


@pytest.mark.parametrize(
    ("gram", "divisors", "match"),
    [
        (np.ones((2, 3)), np.ones(2), "square"),
        (np.eye(2), np.ones(3), "shape"),
        (np.eye(2), np.array([1.0, 0.0]), "positive"),
        (np.eye(2), np.array([1.0, -1.0]), "positive"),
        (np.eye(2), np.array([1.0, np.nan]), "positive"),
    ],
)
def test_normalised_gram_rejects_bad_input(
    gram: np.ndarray, divisors: np.ndarray, match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        normalised_gram(gram, divisors)
