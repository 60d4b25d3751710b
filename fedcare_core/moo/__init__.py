"""Multi-objective optimisation: the min-norm (MGDA) solver and gradient normalisation."""

from fedcare_core.moo.min_norm import SOLVERS, min_norm_weights
from fedcare_core.moo.normalise import (
    NORMALISATIONS,
    normalisation_divisors,
    normalised_gram,
)

__all__ = [
    "NORMALISATIONS",
    "SOLVERS",
    "min_norm_weights",
    "normalisation_divisors",
    "normalised_gram",
]
