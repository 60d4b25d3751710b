"""A client's update after local training, as the union-view methods exchange it.

FedAvg's family (:mod:`fedcare_core.algorithms.fedavg.rounds`) and PAFNet
(:mod:`fedcare_core.algorithms.pafnet.rounds`) send this back each round.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class LocalUpdate:
    """What a client sends back after local training: its model and counts.

    Under differential privacy (:func:`private_local_update`) ``params`` and ``buffers`` are
    the jointly clipped *changes* ``w_k − w^t`` and of the statistics, ``num_examples`` is 0,
    ``objective_examples`` maps each objective the client pursues to 0 (which heads it moved,
    not how many rows it has) and ``losses`` is empty.

    Parameters
    ----------
    client_id
        The client.
    params, buffers
        Its parameters ``w_k`` and BatchNorm statistics after local training (float32).
    num_examples
        N_k: its training rows.
    objective_examples
        N_{k,s}: its training rows labelled for each of its objectives.
    losses
        Mean training loss of each objective over the round's local steps.
    """

    client_id: int
    params: np.ndarray
    buffers: np.ndarray
    num_examples: int
    objective_examples: dict[str, int]
    losses: dict[str, float]


def objective_round_losses(
    updates: Sequence[LocalUpdate], objectives: Sequence[str]
) -> dict[str, float]:
    """Each objective's training loss this round, weighted by N_{k,s} over its clients."""
    acc: dict[str, float] = {}
    weight: dict[str, int] = {}
    for u in updates:
        for s, v in u.losses.items():
            n = u.objective_examples[s]
            acc[s] = acc.get(s, 0.0) + n * v
            weight[s] = weight.get(s, 0) + n
    return {s: acc[s] / weight[s] for s in objectives if weight.get(s)}
