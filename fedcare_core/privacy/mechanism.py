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
- **the accountant** (:mod:`fedcare_core.privacy.accountants`) composes one Gaussian event per
  round with no sampling amplification (every client takes part in every round), adjacency
  add-or-remove one client: the exact privacy-loss distribution by default (``pld``), Rényi DP
  (``rdp``) on request; a result reports the ε of both.

What is protected is a *client's* (a hospital's) participation and all of its data together,
against everyone who sees what the rounds release (the models broadcast each round, λ*, the
final model, the metrics): the server itself sees each clipped update (trusted-server central
DP). Under secure aggregation the sites add the noise themselves
(:mod:`fedcare_core.stage1.secure_sums`), so the server only holds noised sums.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fedcare_core.errors import ConfigError
from fedcare_core.privacy.accountants import (
    ACCOUNTANTS,
    accountant_name,
    epsilon_of_rounds,
    epsilon_spent,
    noise_for_budget,
)

#: The mechanism, as ``results.json`` names it.
_MECHANISM = "gaussian-client-level-joint-clip"
#: The adjacency the guarantee is stated for.
_NEIGHBOURING = "add-or-remove-one-client"
#: Smallest noise multiplier accepted (the calibration's lower end): below it the accountant's
#: ε overflows to infinity, a run that claims DP and guarantees nothing.
MIN_NOISE_MULTIPLIER = 1e-3
#: The clip's bounds: below, a denormal scale that freezes the model; above, noise of z·C that
#: overflows the Gram matrix of the per-objective sums (NaN λ*).
MIN_CLIP = 1e-6
MAX_CLIP = 1e6


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
    accountant
        Whose ε the run reports and its budget binds: ``pld`` (exact) or ``rdp``.
    """

    noise_multiplier: float
    clip: float
    delta: float
    budget: float | None = None
    noise_seed: int | None = None
    accountant: str = "pld"

    @property
    def noise_std(self) -> float:
        """The noise's standard deviation on each coordinate of a per-objective sum: z·C."""
        return self.noise_multiplier * self.clip

    def epsilon_after(self, releases: int) -> float:
        """ε spent after ``releases`` rounds (:func:`epsilon_spent`)."""
        return epsilon_spent(self.noise_multiplier, releases, self.delta, self.accountant)

    def noise_source(self) -> int:
        """The secret the run's noise streams derive from: ``noise_seed``, else 128 random bits."""
        return self.noise_seed if self.noise_seed is not None else secrets.randbits(128)


def resolve_dp(
    *,
    epsilon: float | None,
    delta: float,
    noise_multiplier: float | None,
    clip: float,
    rounds: int,
    noise_seed: int | None = None,
    accountant: str = "pld",
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
    noise_seed, accountant
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
        noise_multiplier = noise_for_budget(epsilon, delta, rounds, accountant)
    elif epsilon is not None:
        spent = epsilon_spent(noise_multiplier, rounds, delta, accountant)
        if spent > epsilon:
            raise ConfigError(
                f"stage1.dp_noise_multiplier {noise_multiplier} over {rounds} rounds spends "
                f"ε = {spent:.4g} at δ = {delta:g} ({accountant}), over the budget "
                f"stage1.dp_epsilon {epsilon}; raise the noise multiplier (at least "
                f"{noise_for_budget(epsilon, delta, rounds, accountant):.4g}) or run fewer rounds"
            )
    return DpSettings(noise_multiplier, clip, delta, epsilon, noise_seed, accountant)


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


def privacy_record(
    settings: DpSettings,
    releases: int,
    *,
    noise_sites: int | None = None,
    contributors: Sequence[int] = (),
) -> dict[str, object]:
    """The ``privacy`` section of a result document after ``releases`` rounds.

    With ``noise_sites`` (secure aggregation: each of that many sites added a share of the
    noise, the server the absent sites' shares) it also says what the server itself could
    learn: each round's sum held ``c_t`` of the ``m`` shares, a Gaussian of multiplier
    ``z·√(c_t/m)`` against the server (``contributors``: ``c_t`` per round), composed into
    ``epsilon_against_server`` (equal to ``epsilon`` when every site contributed every round).
    """
    distributed: dict[str, object] = {"noise_added_by": "server"}
    if noise_sites is not None:
        z = settings.noise_multiplier
        seen = [z * math.sqrt(min(c, noise_sites) / noise_sites) for c in contributors if c > 0]
        distributed = {
            "noise_added_by": f"sites (a share each of {noise_sites}; the server adds absent "
            "sites' shares)",
            "epsilon_against_server": epsilon_of_rounds(seen, settings.delta, settings.accountant),
        }
    return distributed | {
        "mechanism": _MECHANISM,
        "neighbouring": _NEIGHBOURING,
        "epsilon": settings.epsilon_after(releases),
        "delta": settings.delta,
        "epsilon_budget": settings.budget,
        "noise_multiplier": settings.noise_multiplier,
        "clip": settings.clip,
        "rounds_accounted": releases,
        "accountant": accountant_name(settings.accountant),
        "dp_accountant": settings.accountant,
        "epsilon_by_accountant": {
            name: epsilon_spent(settings.noise_multiplier, releases, settings.delta, name)
            for name in ACCOUNTANTS
        },
        "noise": "seeded (reproducible; not for released models)"
        if settings.noise_seed is not None
        else "os-entropy",
    }
