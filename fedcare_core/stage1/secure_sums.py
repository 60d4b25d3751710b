"""Stage 1 from per-objective *sums* only: what a securely aggregated round sends and computes.

Under secure aggregation (``Stage1Config.secagg``; Flower's SecAgg+, see
:mod:`fedcare.flower.secagg_server`) the server never sees a client's update, only the sum over
the clients of one vector each. This module is that vector and the server step computed from
the sum; no cryptography here (masking, key agreement and Shamir shares are Flower's).

Vector layout (float64, one per client, :class:`SumLayout`)
    For each objective ``s`` of the federation, in head order: ``a_{k,s}·Δ_{k,s}`` (P values),
    ``a_{k,s}``, ``a_{k,s}·loss_{k,s}``; then ``b_k·(β_k − β^t)`` (B values: the change of the
    client's BatchNorm statistics from the broadcast ones) and ``b_k``; then a trailer of three
    checks: a sentinel ``c/2``, a clip flag (``c`` if any value exceeded the range, else 0) and
    ``min(max|x|, c)``. Without DP ``a_{k,s} = N_{k,s}/N̄`` and ``b_k = N_k/N̄`` with the public
    scale ``N̄ =`` :data:`COUNT_SCALE`; an objective the client does not pursue has ``a = 0``.
    Under DP the vectors are the jointly clipped ones (:mod:`fedcare_core.stage1.privacy_rounds`),
    ``a_{k,s} = 1`` for a pursued objective, ``b_k = 1`` and no losses.

Server
    From the sums, ``Δ_s = Σ_k a_{k,s}Δ_{k,s} / Σ_k a_{k,s}``, which is eq. 8's
    ``Σ_k p_{k,s}Δ_{k,s}`` with ``p_{k,s} = N_{k,s}/Σ_j N_{j,s}`` (``N̄`` cancels), and the same
    ratio for the losses and the statistics; then
    :func:`~fedcare_core.stage1.loop.descent_direction`
    and the global step as :func:`~fedcare_core.stage1.loop.server_step`. Under DP the server adds
    the Gaussian noise to the sums (trusted-server central DP) and divides by the number of
    contributors (the sum of the indicators), as
    :func:`~fedcare_core.stage1.privacy_rounds.noisy_means`.

Ranges and error
    SecAgg+ works on integers: each value is clipped to ``[-c, c]`` and mapped onto ``T + 1``
    grid points (step ``2c/T``), sums are taken modulo ``M = 2^32``. Here ``c`` and ``T`` are
    powers of two and every client rounds its values onto the grid itself (:func:`seal`), so
    Flower's stochastic rounding has nothing left to round and a round is deterministic.
    ``T`` is the largest power of two with ``K·T < M`` (:func:`choose_levels`), so a sum of K
    clients cannot wrap. ``c``: under DP every value is within the public clip C, so
    ``c = 2^⌈log2 max(C, 1)⌉`` for the whole run; without DP, round 1 uses
    :data:`INITIAL_CLIP` and each later round ``2^⌈log2(HEADROOM · Σ_k m_k)⌉``, where ``m_k``
    is client k's largest value (the trailer's last entry; only its sum is revealed, and it
    bounds every client's largest value). A round whose clip flag is set is discarded and run
    again with a ``GROWTH`` times wider range. The error of a sum is at most ``K·c/T`` per value
    (rounding to nearest; under DP toward zero, at most twice that, so that no client's norm
    grows past C), i.e. ``2c/2^32`` per value at most, for example about ``7.5e-9·c`` with
    K=3 (T = 2^30).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from fedcare_core.config import Stage1Config
from fedcare_core.nn.param_vectors import ParamLayout, squared_norm
from fedcare_core.privacy.mechanism import DpSettings, add_noise
from fedcare_core.stage1.loop import apply_direction, check_finite_updates, descent_direction
from fedcare_core.stage1.privacy_rounds import RoundNoise, noisy_statistics
from fedcare_core.stage1.types import ClientUpdate, RoundInfo, ServerState

#: N̄, the public scale of the counts: ``a_{k,s} = N_{k,s}/N̄``. A constant, not a statistic of
#: any client (Δ_s does not depend on it); it keeps a hospital's scaled counts near 1..100.
COUNT_SCALE = 1000.0
#: SecAgg+'s modulus (Flower's default and largest): sums are taken modulo 2^32.
MODULUS = 2**32
#: The largest number of grid steps: Flower's rounding casts to int32.
MAX_LEVELS = 2**30
#: The first round's clipping range without DP (Flower's default ``clipping_range``).
INITIAL_CLIP = 8.0
#: The next round's range is this many times the sum of the clients' largest values.
_HEADROOM = 2.0
#: A round whose values exceeded the range runs again with the range this many times wider.
GROWTH = 16.0
#: How many times one round may be run (the first try and the wider ones).
MAX_ATTEMPTS = 4
#: The narrowest range (a round of all-zero updates must not shrink it to nothing).
MIN_CLIP = 2.0**-8
#: Distributed DP: a round's range covers a site's clipped values plus this many standard
#: deviations of its noise share (a value beyond: a retried round, about 1e-23 per value).
NOISE_SDS = 10.0
#: The trailer: sentinel, clip flag, largest value.
_TRAILER = 3


class SecureSumError(RuntimeError):
    """A securely aggregated sum that cannot be used (its checks fail)."""


@dataclass(frozen=True)
class SumLayout:
    """Where each part of a client's vector lies (see the module docstring).

    Parameters
    ----------
    objectives
        Every objective of the federation, in head order.
    params, buffers
        P and B: sizes of the parameter vector and of the BatchNorm statistics.
    """

    objectives: tuple[str, ...]
    params: int
    buffers: int

    def objective_start(self, s: str) -> int:
        """Index of ``a_{k,s}·Δ_{k,s}``'s first value."""
        return self.objectives.index(s) * (self.params + 2)

    @property
    def buffer_start(self) -> int:
        """Index of the statistics' first value."""
        return len(self.objectives) * (self.params + 2)

    @property
    def size(self) -> int:
        """Length of the vector, trailer included."""
        return self.buffer_start + self.buffers + 1 + _TRAILER


def pack_update(
    update: ClientUpdate, broadcast_buffers: np.ndarray, layout: SumLayout, *, private: bool
) -> np.ndarray:
    """A client's pre-weighted vector (the trailer still zero; :func:`seal` fills it).

    Parameters
    ----------
    update
        The client's :func:`~fedcare_core.stage1.loop.client_update` (under DP: its clipped one,
        whose ``buffers`` are already the change of the statistics).
    broadcast_buffers
        ``β^t``, the statistics the round started from.
    layout
        The federation's :class:`SumLayout`.
    private
        Whether the round is differentially private (uniform weights, no losses).

    Returns
    -------
    numpy.ndarray
        float64 of ``layout.size`` values.
    """
    out = np.zeros(layout.size, dtype=np.float64)
    p = layout.params
    for s, obj in update.objectives.items():
        i = layout.objective_start(s)
        a = 1.0 if private else obj.num_examples / COUNT_SCALE
        if a == 0.0:
            continue
        out[i : i + p] = a * obj.delta.astype(np.float64)
        out[i + p] = a
        out[i + p + 1] = 0.0 if private else a * obj.loss
    j = layout.buffer_start
    b = 1.0 if private else update.num_examples / COUNT_SCALE
    change = update.buffers.astype(np.float64)
    if not private:
        change = change - broadcast_buffers.astype(np.float64)
    out[j : j + layout.buffers] = b * change
    out[j + layout.buffers] = b
    return out


def site_noise_std(dp: DpSettings, sites: int) -> float:
    """A site's share of the noise, ``z·C/√m``: ``m`` shares make the central ``z·C``."""
    return dp.noise_std / math.sqrt(sites)


def add_site_noise(
    vector: np.ndarray, layout: SumLayout, std: float, rng: np.random.Generator
) -> np.ndarray:
    """A site's vector with its noise share on every Δ block and on the statistics' change.

    Every objective's block is noised, pursued or not (the server's sum of each block then
    holds every site's share); the weights, losses and the trailer are not.
    """
    out = np.array(vector, dtype=np.float64, copy=True)
    p = layout.params
    for s in layout.objectives:
        i = layout.objective_start(s)
        out[i : i + p] += rng.normal(0.0, std, size=p)
    j = layout.buffer_start
    out[j : j + layout.buffers] += rng.normal(0.0, std, size=layout.buffers)
    return out


def site_noise_rng(seed: int | None, round_idx: int, client_id: int) -> np.random.Generator:
    """A site's noise generator: OS entropy, or (a seeded research run) keyed by the seed."""
    if seed is None:
        return np.random.default_rng()
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(round_idx, client_id)))


def grid_step(clip: float, levels: int) -> float:
    """The distance between two grid values, ``2c/T``."""
    return 2.0 * clip / levels


def seal(vector: np.ndarray, clip: float, levels: int, *, private: bool) -> np.ndarray:
    """Fill the trailer, clip every value to ``[-c, c]`` and round it onto SecAgg+'s grid.

    Parameters
    ----------
    vector
        :func:`pack_update`'s output.
    clip, levels
        ``c`` and ``T`` (powers of two).
    private
        A DP round: round toward zero (no value grows, so a client's norm stays within C)
        rather than to the nearest grid value, and report no largest value (the sums the
        server sees are then the noised ones and the data-free checks only).

    Returns
    -------
    numpy.ndarray
        The values Flower's quantisation maps to integers exactly.
    """
    out = vector.astype(np.float64, copy=True)
    body = out[:-_TRAILER]
    largest = float(np.max(np.abs(body))) if body.size else 0.0
    out[-3] = clip / 2
    out[-2] = clip if largest > clip else 0.0
    out[-1] = 0.0 if private else min(largest, clip)
    np.clip(out, -clip, clip, out=out)
    step = grid_step(clip, levels)
    scaled = out / step
    return (np.trunc(scaled) if private else np.rint(scaled)) * step


@dataclass(frozen=True)
class _RoundSums:
    """The unpacked sum of one round's vectors.

    Parameters
    ----------
    deltas, weights, losses
        Per objective: ``Σ_k a_{k,s}Δ_{k,s}``, ``Σ_k a_{k,s}``, ``Σ_k a_{k,s}·loss_{k,s}``.
    buffer_change, buffer_weight
        ``Σ_k b_k(β_k − β^t)`` and ``Σ_k b_k``.
    clipped
        How many clients had a value outside the range (the round cannot be used).
    largest
        ``Σ_k min(max|x_k|, c)``: the next round's range comes from it.
    contributors
        How many clients' vectors the sum holds.
    """

    deltas: dict[str, np.ndarray]
    weights: dict[str, float]
    losses: dict[str, float]
    buffer_change: np.ndarray
    buffer_weight: float
    clipped: int
    largest: float
    contributors: int


def unpack_sums(
    total: np.ndarray, layout: SumLayout, clip: float, levels: int, contributors: int
) -> _RoundSums:
    """Split the sum of ``contributors`` sealed vectors, checking its sentinel.

    Raises
    ------
    SecureSumError
        If the sum has the wrong length, or its sentinel is not ``contributors·c/2`` (the masks
        did not cancel: e.g. a client dropped between sending its vector and unmasking).
    """
    if total.shape != (layout.size,):
        raise SecureSumError(f"a sum of {total.size} values; the layout needs {layout.size}")
    tolerance = contributors * grid_step(clip, levels)
    if abs(total[-3] - contributors * clip / 2) > tolerance:
        raise SecureSumError(
            f"the secure sum's check value is {total[-3]:.6g}, expected "
            f"{contributors * clip / 2:.6g} for {contributors} clients: the masks did not cancel"
        )
    p = layout.params
    deltas, weights, losses = {}, {}, {}
    for s in layout.objectives:
        i = layout.objective_start(s)
        deltas[s] = total[i : i + p]
        weights[s] = float(total[i + p])
        losses[s] = float(total[i + p + 1])
    j = layout.buffer_start
    return _RoundSums(
        deltas=deltas,
        weights=weights,
        losses=losses,
        buffer_change=total[j : j + layout.buffers],
        buffer_weight=float(total[j + layout.buffers]),
        clipped=round(float(total[-2]) / clip),
        largest=float(total[-1]),
        contributors=contributors,
    )


def _has_weight(weight: float, private: bool) -> bool:
    """Whether some client contributed (weights are ≥ 1/N̄, or whole counts under DP)."""
    return weight > (0.5 if private else 0.5 / COUNT_SCALE)


def _means_from_sums(sums: _RoundSums) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """Eq. 8 from the sums: ``Δ_s`` and the weighted loss of every objective with an update."""
    deltas: dict[str, np.ndarray] = {}
    losses: dict[str, float] = {}
    for s, weight in sums.weights.items():
        if _has_weight(weight, private=False):
            deltas[s] = sums.deltas[s] / weight
            losses[s] = sums.losses[s] / weight
    return deltas, losses


def _noisy_means_from_sums(
    sums: _RoundSums, objectives: Sequence[str], noise: RoundNoise
) -> tuple[dict[str, np.ndarray], np.ndarray | None]:
    """``privacy.stage1_rounds.noisy_means`` on sums: noise drawn in the same order.

    Under distributed noise (``noise.sites``) the sites added it; the server adds only the
    shares of the sites that did not contribute, so that the released mean always carries the
    central ``z·C`` (nothing when every site contributed).
    """
    std = noise.settings.noise_std
    if noise.sites is not None:
        missing = max(noise.sites - sums.contributors, 0)
        std = noise.settings.noise_std * math.sqrt(missing / noise.sites)
    means: dict[str, np.ndarray] = {}
    for s in objectives:
        count = round(sums.weights[s])
        if count > 0:
            means[s] = add_noise(sums.deltas[s], std, noise.rng) / count
    count = round(sums.buffer_weight)
    if count == 0 or sums.buffer_change.size == 0:
        return means, None
    return means, add_noise(sums.buffer_change, std, noise.rng) / count


def secure_server_step(
    state: ServerState,
    sums: _RoundSums,
    layout: ParamLayout,
    config: Stage1Config,
    round_idx: int,
    participants: Sequence[int],
    noise: RoundNoise | None = None,
) -> tuple[ServerState, RoundInfo]:
    """:func:`~fedcare_core.stage1.loop.server_step` from a round's sums instead of its updates.

    Parameters
    ----------
    state
        ``w^t``, BatchNorm statistics and server optimiser state.
    sums
        The round's :class:`_RoundSums`.
    layout, config, round_idx
        As for :func:`~fedcare_core.stage1.loop.server_step`.
    participants
        The client ids the sum holds (which clients took part is not hidden).
    noise
        Under DP, the round's noise (added to the sums); None: eq. 8's weighted means.

    Returns
    -------
    tuple[ServerState, RoundInfo]
        ``w^{t+1}`` and the round's record.
    """
    objectives = tuple(sums.weights)
    ids = tuple(sorted(participants))
    if noise is None:
        deltas, losses = _means_from_sums(sums)
        change = None
        if _has_weight(sums.buffer_weight, private=False) and sums.buffer_change.size:
            change = sums.buffer_change / sums.buffer_weight
    else:
        deltas, change = _noisy_means_from_sums(sums, objectives, noise)
        losses = {}
    missing = tuple(s for s in objectives if s not in deltas)
    if not deltas:
        return state, RoundInfo(round_idx, {}, float("nan"), {}, ids, missing)
    check_finite_updates(deltas, round_idx)
    direction, lambdas = descent_direction(deltas, losses, layout, config)
    new = replace(apply_direction(state, direction, config), dp_releases=state.dp_releases)
    epsilon = None
    if noise is not None:
        new.dp_releases += 1
        epsilon = noise.settings.epsilon_after(new.dp_releases)
        if change is not None:
            new.buffers = noisy_statistics(state.buffers, change, layout.variances)
    elif change is not None:
        new.buffers = (state.buffers.astype(np.float64) + change).astype(np.float32)
    info = RoundInfo(
        round_idx, lambdas, squared_norm(direction), losses, ids, missing, epsilon=epsilon
    )
    return new, info


def _power_of_two_at_least(value: float) -> float:
    return float(2.0 ** math.ceil(math.log2(value)))


def choose_levels(num_clients: int, modulus: int = MODULUS) -> int:
    """``T``: the largest power of two (at most :data:`MAX_LEVELS`) with ``K·T < M``."""
    levels = MAX_LEVELS
    while num_clients * levels >= modulus:
        levels //= 2
    if levels < 2:
        raise ValueError(f"secure aggregation of {num_clients} clients does not fit {modulus}")
    return levels


def initial_clip(config: Stage1Config, sites: int | None = None) -> float:
    """Round 1's range ``c``: from the public DP clip C, else :data:`INITIAL_CLIP`.

    With the noise added by ``sites`` sites (distributed DP) the range also covers
    :data:`NOISE_SDS` standard deviations of a site's share (all public numbers).
    """
    dp = config.privacy()
    if dp is not None:
        share = 0.0 if sites is None else NOISE_SDS * site_noise_std(dp, sites)
        return _power_of_two_at_least(max(dp.clip + share, 1.0))
    return INITIAL_CLIP


def next_clip(sums: _RoundSums, current: float, config: Stage1Config) -> float:
    """The next round's range: DP's fixed one, else from the sum of the clients' largest values."""
    if config.privacy() is not None:
        return current
    return max(MIN_CLIP, _power_of_two_at_least(max(_HEADROOM * sums.largest, MIN_CLIP)))
