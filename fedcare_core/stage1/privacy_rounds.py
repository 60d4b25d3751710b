"""Algorithm 1 under client-level DP: what a client clips, what the server sums and noises.

:mod:`fedcare_core.privacy.mechanism` has the mechanism and the accountant; this module applies
them to Stage 1's vectors (and to every baseline that reuses its client and server steps; FedAvg and
FedProx clip their model change with :func:`clip_client_vectors` and noise its sum with
:func:`noisy_sum`). Plain arrays in and out, so :mod:`fedcare_core.stage1.loop` wraps them in its
update types.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from fedcare_core.privacy.mechanism import DpSettings, add_noise, clip_jointly
from fedcare_core.stage1.types import ClientUpdate, ObjectiveUpdate

#: Smallest BatchNorm running variance the server keeps after adding noise to the statistics:
#: a noisy variance at or below zero would make evaluation divide by (nearly) nothing.
VARIANCE_FLOOR = 1e-3


#: How far inside C a client clips, so that rounding to float32 cannot lift the norm above C.
_FLOAT32_MARGIN = 1e-6


@dataclass(frozen=True)
class RoundNoise:
    """One round's noise: the run's settings and the round's generator.

    Parameters
    ----------
    settings
        z, C, δ and the budget.
    rng
        :func:`fedcare_core.privacy.mechanism.noise_stream` of the run's secret and this round.
    sites
        Distributed noise (secure aggregation): this many sites each added a share
        (:func:`fedcare_core.stage1.secure_sums.add_site_noise`); the server adds only the
        absent sites' shares. None: the server adds all of it.
    """

    settings: DpSettings
    rng: np.random.Generator
    sites: int | None = None


def clip_client_vectors(
    deltas: Mapping[str, np.ndarray], buffer_change: np.ndarray, clip: float
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """A client's round, clipped jointly: every Δ_{k,s} and its BatchNorm change together.

    Parameters
    ----------
    deltas
        Objective → Δ_{k,s}.
    buffer_change
        The client's BatchNorm statistics after local training minus the broadcast ones.
    clip
        C.

    Returns
    -------
    tuple[dict[str, numpy.ndarray], numpy.ndarray]
        The same vectors (float32) scaled by one factor so that all together have L2 norm ≤ C.
    """
    names = list(deltas)
    parts = [*(deltas[s] for s in names), buffer_change]
    # Clipped in float64 a hair inside C: casting to float32 moves each value by at most one
    # part in 2^24, so the sent vectors' norm stays ≤ C.
    scaled = [v.astype(np.float32) for v in clip_jointly(parts, clip * (1 - _FLOAT32_MARGIN))[0]]
    return dict(zip(names, scaled[:-1], strict=True)), scaled[-1]


def private_update(
    client_id: int, updates: Mapping[str, ObjectiveUpdate], buffer_change: np.ndarray, clip: float
) -> ClientUpdate:
    """The update a client sends under DP: jointly clipped vectors, no counts, no losses.

    Parameters
    ----------
    client_id
        The client.
    updates
        Its Δ_{k,s} (with counts and losses, which are dropped).
    buffer_change
        Its BatchNorm statistics after local training minus the broadcast ones.
    clip
        C.
    """
    deltas, change = clip_client_vectors(
        {s: u.delta for s, u in updates.items()}, buffer_change, clip
    )
    hidden = {s: ObjectiveUpdate(d, 0, float("nan")) for s, d in deltas.items()}
    return ClientUpdate(client_id=client_id, objectives=hidden, buffers=change, num_examples=0)


def noisy_means(
    contributions: Sequence[Mapping[str, np.ndarray]],
    buffer_changes: Sequence[np.ndarray],
    objectives: Sequence[str],
    noise: RoundNoise,
) -> tuple[dict[str, np.ndarray], np.ndarray | None]:
    """Per-objective sums plus Gaussian noise, then uniform means over the contributors.

    Parameters
    ----------
    contributions
        Each replying client's clipped Δ_{k,s} by objective, in client order.
    buffer_changes
        Each replying client's clipped BatchNorm change, in the same order.
    objectives
        All objectives of the federation, in head order (the noise is drawn in this order,
        then for the statistics).
    noise
        The round's settings and generator.

    Returns
    -------
    tuple[dict[str, numpy.ndarray], numpy.ndarray | None]
        Δ_s for every objective some client replied for (float64), and the mean BatchNorm
        change (None when nobody replied or the model has no statistics).
    """
    means: dict[str, np.ndarray] = {}
    for s in objectives:
        rows = [c[s] for c in contributions if s in c]
        if rows:
            means[s] = noisy_sum(rows, noise) / len(rows)
    if not buffer_changes or buffer_changes[0].size == 0:
        return means, None
    return means, noisy_sum(buffer_changes, noise) / len(buffer_changes)


def noisy_sum(rows: Sequence[np.ndarray], noise: RoundNoise) -> np.ndarray:
    """The float64 sum of clipped vectors plus N(0, (z·C)²) on every coordinate.

    The one noisy release of a vector in a round: Stage 1 calls it per objective and for the
    BatchNorm change (:func:`noisy_means`), FedAvg/FedProx for the model change and the
    BatchNorm change (:func:`fedcare_core.algorithms.fedavg.rounds.server_round`).

    Parameters
    ----------
    rows
        The replying clients' clipped vectors (one shape), in client order.
    noise
        The round's settings and generator (advanced by one draw per coordinate).

    Returns
    -------
    numpy.ndarray
        Σ rows + noise (float64).
    """
    total = np.sum(np.stack(rows).astype(np.float64), axis=0)
    return add_noise(total, noise.settings.noise_std, noise.rng)


def noisy_statistics(
    buffers: np.ndarray, mean_change: np.ndarray, variances: Sequence[slice]
) -> np.ndarray:
    """The server's BatchNorm statistics after a noisy mean change; variances kept ≥ the floor."""
    out = buffers.astype(np.float64) + mean_change
    for sl in variances:
        out[sl] = np.maximum(out[sl], VARIANCE_FLOOR)
    return out.astype(np.float32)
