"""Client-level differential privacy for the federated rounds: the clip, the noise, the ledger.

The mechanism (DESIGN.md "Differential privacy") is DP-FedAvg's (McMahan et al., 2018) made
multi-objective:

- **at each client**, every vector it sends in a round (each Δ_{k,s} and the change of its
  BatchNorm statistics) is clipped *jointly*: one L2 norm over their concatenation, scaled down
  to at most ``clip`` (:func:`clip_jointly`). A client's whole contribution to a round therefore
  has L2 norm ≤ C, whatever its data. It sends no counts and no losses.
- **at the server**, the clipped vectors are summed per objective and Gaussian noise of standard
  deviation ``noise_multiplier · clip`` is added to every coordinate of every sum, once per round
  (:func:`add_noise`). Removing or adding one client moves the concatenation of the sums by at
  most C, so the round is one Gaussian mechanism with that noise multiplier. Everything after
  (the uniform mean over the clients that replied, the Gram matrix, λ*, the step, ‖d‖²) is
  post-processing.
- **the accountant** is Google's ``dp-accounting`` RDP accountant (the library Flower 1.42's
  ``RdpAccountant`` wraps), composing one Gaussian event per round with no sampling
  amplification (every client takes part in every round), adjacency add-or-remove one client.

What is protected is a *client's* (a hospital's) participation and all of its data together,
against everyone who sees what the rounds release (the models broadcast each round, λ*, the
final model, the metrics): the server itself sees each clipped update (trusted-server central
DP; secure aggregation removes that).
"""

from __future__ import annotations

import functools
import math
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata

import numpy as np

from fedcare_core.errors import ConfigError

#: The mechanism, as ``results.json`` names it.
_MECHANISM = "gaussian-client-level-joint-clip"
#: The adjacency the guarantee is stated for.
_NEIGHBOURING = "add-or-remove-one-client"
#: Largest noise multiplier searched when calibrating to a budget, and accepted when given.
MAX_NOISE_MULTIPLIER = 1e6
#: Smallest noise multiplier accepted (the calibration's lower end): below it the accountant's
#: ε overflows to infinity, a run that claims DP and guarantees nothing.
MIN_NOISE_MULTIPLIER = 1e-3
#: The clip's bounds: below, a denormal scale that freezes the model; above, noise of z·C that
#: overflows the Gram matrix of the per-objective sums (NaN λ*).
MIN_CLIP = 1e-6
MAX_CLIP = 1e6


def _accountant_name() -> str:
    """The accountant, with the installed library's version (``dp-accounting 0.6.0 RDP``)."""
    return f"dp-accounting {metadata.version('dp-accounting')} RDP"


@dataclass(frozen=True)
class DpSettings:
    """A run's resolved differential-privacy settings.

    Parameters
    ----------
    noise_multiplier
        z: the Gaussian noise's standard deviation over the clip.
    clip
        C: the bound on the L2 norm of a client's whole contribution to one round.
    delta
        δ of the reported (ε, δ).
    budget
        The ε the run must not exceed (None: no budget, ε is reported only).
    noise_seed
        Seeds the noise for a reproducible research run (None: fresh OS entropy per run).
    """

    noise_multiplier: float
    clip: float
    delta: float
    budget: float | None = None
    noise_seed: int | None = None

    @property
    def noise_std(self) -> float:
        """The noise's standard deviation on each coordinate of a per-objective sum: z·C."""
        return self.noise_multiplier * self.clip

    def epsilon_after(self, releases: int) -> float:
        """ε spent after ``releases`` rounds (:func:`epsilon_spent`)."""
        return epsilon_spent(self.noise_multiplier, releases, self.delta)

    def noise_source(self) -> int:
        """The secret the run's noise streams derive from: ``noise_seed``, else 128 random bits."""
        return self.noise_seed if self.noise_seed is not None else secrets.randbits(128)


def _accountant():  # type: ignore[no-untyped-def]
    from dp_accounting import NeighboringRelation
    from dp_accounting.rdp import RdpAccountant

    return RdpAccountant(neighboring_relation=NeighboringRelation.ADD_OR_REMOVE_ONE)


def _rounds_event(noise_multiplier: float, releases: int):  # type: ignore[no-untyped-def]
    from dp_accounting import GaussianDpEvent, SelfComposedDpEvent

    return SelfComposedDpEvent(GaussianDpEvent(noise_multiplier), releases)


@functools.lru_cache(maxsize=256)
def epsilon_spent(noise_multiplier: float, releases: int, delta: float) -> float:
    """ε after ``releases`` Gaussian rounds of multiplier ``noise_multiplier``, at ``delta``.

    Parameters
    ----------
    noise_multiplier
        z (> 0).
    releases
        Rounds composed so far (0: nothing released, ε = 0).
    delta
        δ in (0, 1).

    Returns
    -------
    float
        The RDP accountant's ε (non-decreasing in ``releases``).
    """
    if releases == 0:
        return 0.0
    accountant = _accountant()
    accountant.compose(_rounds_event(noise_multiplier, releases))
    return float(accountant.get_epsilon(delta))


@functools.lru_cache(maxsize=64)
def noise_for_budget(epsilon: float, delta: float, rounds: int) -> float:
    """The smallest noise multiplier whose ``rounds`` rounds spend at most ``epsilon``.

    Found by the accountant's own calibration (Brent's method on ε(z)), then checked: the
    returned z never spends more than ``epsilon``.

    Raises
    ------
    ConfigError
        No multiplier up to :data:`MAX_NOISE_MULTIPLIER` meets the budget.
    """
    from dp_accounting import LowerEndpointAndGuess, calibrate_dp_mechanism
    from dp_accounting.mechanism_calibration import NoBracketIntervalFoundError

    try:
        z = float(
            calibrate_dp_mechanism(
                _accountant,
                lambda value: _rounds_event(value, rounds),
                epsilon,
                delta,
                LowerEndpointAndGuess(1e-3, 1.0),
                tol=1e-6,
            )
        )
    except NoBracketIntervalFoundError:
        z = math.inf
    while z <= MAX_NOISE_MULTIPLIER and epsilon_spent(z, rounds, delta) > epsilon:
        z *= 1 + 1e-6
    if not z <= MAX_NOISE_MULTIPLIER:
        raise ConfigError(
            f"stage1.dp_epsilon {epsilon} cannot be met over {rounds} rounds at dp_delta "
            f"{delta} by any noise multiplier up to {MAX_NOISE_MULTIPLIER:g}"
        )
    return z


def resolve_dp(
    *,
    epsilon: float | None,
    delta: float,
    noise_multiplier: float | None,
    clip: float,
    rounds: int,
    noise_seed: int | None = None,
) -> DpSettings | None:
    """The run's DP settings, or None when DP is off; refuse a run its budget cannot cover.

    Parameters
    ----------
    epsilon
        The budget ε (``--dp-epsilon``). With no ``noise_multiplier`` the multiplier is
        derived so that ``rounds`` rounds spend at most ``epsilon``.
    delta
        δ (``--dp-delta``).
    noise_multiplier
        z (``--dp-noise-multiplier``). With ``epsilon`` too, the run is refused when its
        ``rounds`` rounds would spend more than ``epsilon``.
    clip
        C (``--dp-clip``).
    rounds
        T, the rounds planned.
    noise_seed
        See :class:`DpSettings`.

    Raises
    ------
    ConfigError
        The budget cannot be met, or ``noise_multiplier`` over ``rounds`` rounds exceeds it
        (naming the ε it would spend).
    """
    if epsilon is None and noise_multiplier is None:
        return None
    if noise_multiplier is None:
        assert epsilon is not None
        noise_multiplier = noise_for_budget(epsilon, delta, rounds)
    elif epsilon is not None:
        spent = epsilon_spent(noise_multiplier, rounds, delta)
        if spent > epsilon:
            raise ConfigError(
                f"stage1.dp_noise_multiplier {noise_multiplier} over {rounds} rounds spends "
                f"ε = {spent:.4g} at δ = {delta:g}, over the budget stage1.dp_epsilon "
                f"{epsilon}; raise the noise multiplier (at least "
                f"{noise_for_budget(epsilon, delta, rounds):.4g}) or run fewer rounds"
            )
    return DpSettings(noise_multiplier, clip, delta, epsilon, noise_seed)


def clip_jointly(vectors: Sequence[np.ndarray], clip: float) -> tuple[list[np.ndarray], float]:
    """Scale ``vectors`` together so that their concatenation has L2 norm at most ``clip``.

    Parameters
    ----------
    vectors
        Everything one client sends in a round (each Δ_{k,s}, its BatchNorm change).
    clip
        C.

    Returns
    -------
    tuple[list[numpy.ndarray], float]
        The scaled vectors (float64) and the factor ``min(1, C / ‖v‖)`` applied to all.
    """
    as64 = [np.asarray(v, dtype=np.float64) for v in vectors]
    norm = math.sqrt(sum(float(np.sum(np.square(v))) for v in as64))
    factor = 1.0 if norm <= clip else clip / norm
    return [v * factor for v in as64], factor


def noise_stream(secret: int, round_idx: int) -> np.random.Generator:
    """The server's Gaussian noise generator for one round, keyed by the run's secret."""
    return np.random.default_rng(np.random.SeedSequence(entropy=secret, spawn_key=(round_idx,)))


def add_noise(total: np.ndarray, std: float, rng: np.random.Generator) -> np.ndarray:
    """``total`` plus independent N(0, std²) on every coordinate (float64)."""
    return np.asarray(total, dtype=np.float64) + rng.normal(0.0, std, size=np.shape(total))


def privacy_record(settings: DpSettings, releases: int) -> dict[str, object]:
    """The ``privacy`` section of a result document after ``releases`` rounds."""
    return {
        "mechanism": _MECHANISM,
        "neighbouring": _NEIGHBOURING,
        "epsilon": settings.epsilon_after(releases),
        "delta": settings.delta,
        "epsilon_budget": settings.budget,
        "noise_multiplier": settings.noise_multiplier,
        "clip": settings.clip,
        "rounds_accounted": releases,
        "accountant": _accountant_name(),
        "noise": "seeded (reproducible; not for released models)"
        if settings.noise_seed is not None
        else "os-entropy",
    }
