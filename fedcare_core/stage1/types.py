"""Stage 1's data: a client's update, the server's state, a round's record, the result.

Plain dataclasses (no behaviour), shared by :mod:`fedcare_core.stage1.loop`, its DP variant
(:mod:`fedcare_core.stage1.privacy_rounds`), the checkpoints and the Flower messages.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from fedcare_core.nn.param_vectors import ParamLayout


@dataclass(frozen=True)
class ObjectiveUpdate:
    """A client's contribution for one objective (eq. 7).

    Parameters
    ----------
    delta
        Δ_{k,s}: the sum of the τ stochastic gradients over the whole parameter vector (float32).
    num_examples
        N_{k,s}: training rows labelled for the objective (the aggregation weight, eq. 8).
    loss
        Mean training loss over the τ local steps.
    """

    delta: np.ndarray
    num_examples: int
    loss: float


@dataclass(frozen=True)
class ClientUpdate:
    """Everything a client sends back in one round (model updates and counts only).

    Under differential privacy (``Stage1Config.privacy()``) the Δ_{k,s} and ``buffers`` (then
    the *change* of the client's BatchNorm statistics) are clipped jointly, and every count is
    0 and every loss NaN: the client discloses nothing else.
    """

    client_id: int
    objectives: dict[str, ObjectiveUpdate]
    buffers: np.ndarray
    num_examples: int


@dataclass(frozen=True)
class RoundInfo:
    """What the server records each round.

    ``lambdas`` holds λ*_s for every objective that received an update; ``missing_objectives``
    lists objectives no participating client pursued this round (their heads keep their last
    values).
    """

    round: int
    lambdas: dict[str, float]
    d_sq_norm: float
    losses: dict[str, float]
    participants: tuple[int, ...]
    missing_objectives: tuple[str, ...] = ()
    #: ε spent after this round under differential privacy (None: no DP).
    epsilon: float | None = None


@dataclass
class ServerState:
    """The server's model and optimiser state between rounds."""

    params: np.ndarray
    buffers: np.ndarray
    adam_m: np.ndarray | None = None
    adam_v: np.ndarray | None = None
    step: int = 0
    #: The DP accountant's state: Gaussian rounds released so far.
    dp_releases: int = 0


@dataclass(frozen=True)
class Stage1Snapshot:
    """Everything :func:`run_stage1` carries from one round to the next (a checkpoint's content).

    Every client's random streams are derived from ``(seed, round, client, objective)`` and every
    client takes part in every round, so the loop keeps no random state across rounds: the server
    state, the trace and the convergence flag determine the rest of the run.

    Parameters
    ----------
    round
        The last completed round (1-based).
    state
        ``w^{round+1}``: parameters, BatchNorm statistics and server optimiser state.
    rounds
        The trace of rounds ``1..round``.
    converged
        Whether ‖d‖² ≤ ε was reached (the loop stops after this round).
    notes
        What a federated backend recorded so far (lost clients, objectives without an
        update); the in-process loop has none.
    """

    round: int
    state: ServerState
    rounds: tuple[RoundInfo, ...]
    converged: bool
    notes: tuple[str, ...] = ()


#: Called with the snapshot after each completed round (e.g. to write a checkpoint).
RoundCallback = Callable[[Stage1Snapshot], None]


@dataclass(frozen=True)
class Stage1Result:
    """Outcome of Stage 1: the converged model ``w*`` and the per-round trace."""

    params: np.ndarray
    buffers: np.ndarray
    rounds: list[RoundInfo]
    converged: bool
    objectives: tuple[str, ...]
    layout: ParamLayout
    notes: list[str] = field(default_factory=list)
