"""FedCARE's Stage 1 server as a Flower :class:`~flwr.serverapp.strategy.Strategy`.

:meth:`FedCareStrategy.aggregate_train` decodes the replies and calls
:func:`fedcare_core.stage1.loop.server_step` (per-objective aggregation, min-norm λ*, the global
step and ‖d‖²). The strategy keeps the :class:`~fedcare_core.stage1.loop.ServerState` and the
per-round :class:`~fedcare_core.stage1.loop.RoundInfo` list, so the run returns the same trace
as the in-process runner.

The round loop is Flower's own :meth:`Strategy.start <flwr.serverapp.strategy.Strategy.start>`;
what Algorithm 1 and the fault policy need beyond it lives in the hooks Flower's strategies
override. :meth:`FedCareStrategy.configure_train` first learns which client each node serves (a
``query`` handshake on the grid it is given: all K clients before round 1, new nodes before
later rounds) and drops nodes that left. :meth:`FedCareStrategy.aggregate_train` records *which*
clients did not answer. Stage 1 stops when ‖d‖² ≤ ε: Flower's loop has no early exit, so after
that round (or once no client is left) :meth:`configure_train` sends nothing and the remaining
iterations of Flower's loop neither send nor aggregate. The ServerApp runs it on a
:class:`~fedcare.flower.polling.PollingGrid` (:func:`fedcare.flower.server_app.run_server`),
which polls for replies at :attr:`RunPlan.pull_interval_s` rather than every 3 s, and names the
node behind each of the SuperLink's own error replies.

Faults: a client that returns an error (its ClientApp raised) or does not answer within the
round timeout is skipped for that round and asked again the next; a slow hospital is not
expelled for one slow round. A node the SuperLink reports unavailable (it missed its heartbeats:
Flower's ``NODE_UNAVAILABLE`` error code, read from Flower through
:mod:`fedcare.flower.flwr_internals`, or it no longer appears in ``grid.get_node_ids()``) is
dropped from the run; if its SuperNode reconnects it appears as a new node, answers the
handshake, and rejoins. Objectives with no replying client keep their heads
(``RoundInfo.missing_objectives``). Every loss is logged and kept in :attr:`notes` with the
round and the client. No round aggregates fewer replies than the plan's floor
(:meth:`RunPlan.round_floor`: a federation's ``--min-sites``; under DP or SecAgg+ at least 2):
below it, or with fewer clients left to ask, :mod:`fedcare.flower.round_floor`'s
``TooFewSites`` ends Stage 1 without aggregating the round and without a result.

Checkpoints: when the plan names a checkpoint file (``fedcare run --run-dir``), the strategy
writes a :class:`~fedcare_core.stage1.loop.Stage1Snapshot` there after every round, with the core's
:func:`~fedcare_core.resume.checkpoint.save_checkpoint` (atomic, owner-only). A strategy whose
plan's file already holds a checkpoint of the same run restores the server state, the trace and the
notes, and Flower's loop runs rounds ``1..r`` of the checkpoint as empty rounds (nothing sent,
nothing aggregated: the same mechanism as after convergence), so every later round keeps its
true number and each client's random streams, seeded by ``(seed, round, client)``, are those of
the uninterrupted run.

Differential privacy (``Stage1Config.privacy()``): the run's noise secret is drawn once, when
the strategy is built (the ``dp_noise_seed``, else 128 bits of OS entropy; it never leaves the
ServerApp), and round ``t`` is noised with ``noise_stream(secret, t)``, as
:func:`~fedcare_core.stage1.loop.run_stage1` does. The accountant's state is the server state's
``dp_releases``, which the checkpoint keeps, so ε continues after a resume.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable

from flwr.app import ArrayRecord, ConfigRecord, Message, MessageType, MetricRecord
from flwr.serverapp import Grid
from flwr.serverapp.strategy import Strategy

from fedcare.flower.flwr_internals import node_unavailable_error_code
from fedcare.flower.membership import TTL_MARGIN_S, ClientLoss, Membership, node_of
from fedcare.flower.messages import (
    ProtocolError,
    decode_client_update,
    encode_train_instruction,
    model_arrays,
    model_from_arrays,
    round_metrics,
)
from fedcare.flower.plan_checkpoint import restore_snapshot, save_snapshot
from fedcare.flower.round_floor import require_floor
from fedcare.flower.run_plan import RunPlan
from fedcare.flower.site_errors import error_text
from fedcare.flower.site_messages import with_assignment
from fedcare.flower.union_view import encode_union_layout, plan_union_layout
from fedcare_core.nn.param_vectors import get_buffers, get_params, param_layout
from fedcare_core.privacy.mechanism import noise_stream
from fedcare_core.stage1.loop import (
    ClientUpdate,
    RoundInfo,
    ServerState,
    Stage1Snapshot,
    build_model,
    server_step,
)
from fedcare_core.stage1.privacy_rounds import RoundNoise

LOGGER = logging.getLogger(__name__)


class FedCareStrategy(Strategy):
    """Stage 1 of FedCARE (paper Algorithm 1) on a Flower Grid.

    Run it with Flower's :meth:`~flwr.serverapp.strategy.Strategy.start` on a
    :class:`~fedcare.flower.polling.PollingGrid` (:func:`fedcare.flower.server_app.run_server`
    does). On another grid it still runs, but the SuperLink's own error replies cannot be
    traced to their node, so a node it reports unavailable is only dropped once it leaves
    ``grid.get_node_ids()``.

    Parameters
    ----------
    plan
        Objectives, model and Stage 1 configuration, seed, K and timeouts.
    on_round
        Called with each round's :class:`RoundInfo` and wall time after the global step (the
        ServerApp uses it to stream progress to disk).
    """

    def __init__(
        self, plan: RunPlan, *, on_round: Callable[[RoundInfo, float], None] | None = None
    ) -> None:
        self.plan = plan
        self.objectives = plan.objective_names
        model = build_model(plan.common_width, self.objectives, plan.model, plan.seed)
        self.layout = param_layout(model)
        self.state = ServerState(get_params(model), get_buffers(model))
        self.rounds: list[RoundInfo] = []
        self.notes: list[str] = []
        self.converged = False
        self.membership = Membership(plan, lambda line: self.notes.append(line))
        self._node_unavailable = node_unavailable_error_code()  # fails here, before any round
        self._grid: Grid | None = None  # the grid of the round being waited on
        self._asked: list[int] = []  # nodes sent the round's instruction
        self._started = False
        self._stopped = False  # converged or k of n missed: later rounds send nothing
        self._round_start = 0.0
        self._on_round = on_round
        # FMGDA/FSMGDA: Algorithm 1 on the baselines' union vectors (each client embeds its own)
        self._union_layout = None
        if plan.union_common_width is not None:
            self._union_layout = encode_union_layout(plan_union_layout(plan))
        self.resumed_round = 0  # rounds 1..this were restored from the plan's checkpoint
        self._dp = plan.stage1.privacy()
        self._noise_secret = 0 if self._dp is None else self._dp.noise_source()
        self._restore()

    @property
    def clients(self) -> dict[int, int]:
        """Node id → client id, for the nodes still in the run."""
        return self.membership.clients

    @property
    def losses(self) -> list[ClientLoss]:
        """Every client that did not contribute to a round, in order."""
        return self.membership.losses

    # ---- Strategy API ---------------------------------------------------------------------

    def summary(self) -> None:
        """Log the configuration."""
        LOGGER.info(
            "FedCARE Stage 1: K=%d, objectives=%s, T=%d, τ=%d, η_l=%g, η_g=%g, solver=%s",
            self.plan.num_clients,
            list(self.objectives),
            self.plan.stage1.rounds,
            self.plan.stage1.local_steps,
            self.plan.stage1.local_lr,
            self.plan.stage1.global_lr,
            self.plan.stage1.solver,
        )
        if self._dp is not None:
            LOGGER.info(
                "client-level DP: z=%g, C=%g, δ=%g, noise %s",
                self._dp.noise_multiplier,
                self._dp.clip,
                self._dp.delta,
                "seeded" if self._dp.noise_seed is not None else "from OS entropy",
            )

    def initial_arrays(self) -> ArrayRecord:
        """``w^0`` (built from the experiment seed, as the in-process runner does)."""
        return model_arrays(self.state.params, self.state.buffers)

    def configure_train(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        """One ``train`` message carrying ``w^t`` per client still in the run.

        Before round 1 it waits for the K clients' handshakes (or the start-up timeout); before
        every round it drops the nodes that left and greets new ones. After convergence, or
        once no client is left, it returns no message.
        """
        self._grid = grid
        self._asked = []
        if self._skips(server_round) or not self._admit(server_round, arrays, grid):
            return []
        self._round_start = time.time()
        content = encode_train_instruction(
            server_round=server_round,
            seed=self.plan.seed,
            objectives=self.plan.objectives,
            common_width=self.plan.common_width,
            model=self.plan.model,
            stage1=self.plan.stage1,
            arrays=arrays,
            union_layout=self._union_layout,
        )
        ttl = self.plan.round_timeout_s + TTL_MARGIN_S
        messages = [
            Message(
                with_assignment(content, self.clients[node]),
                node,
                MessageType.TRAIN,
                group_id=str(server_round),
                ttl=ttl,
            )
            for node in self.membership.nodes_by_client()
        ]
        self._asked = [m.metadata.dst_node_id for m in messages]
        return messages

    def aggregate_train(
        self, server_round: int, replies: Iterable[Message]
    ) -> tuple[ArrayRecord | None, MetricRecord | None]:
        """Decode the replies, run the core's server step, and return ``w^{t+1}`` and λ*.

        Replies are ordered by client id before aggregation, so the floating-point sums are
        the in-process runner's, whichever order the replies arrived in. A round that sent
        nothing (after convergence, or a round restored from the checkpoint) aggregates nothing.

        Raises
        ------
        TooFewSites
            If fewer clients replied than the plan's floor (:meth:`RunPlan.round_floor`):
            nothing of the round is aggregated and Stage 1 ends.
        """
        if self._skips(server_round):
            return None, None
        updates = self._collect(server_round, replies)
        updates.sort(key=lambda u: u.client_id)
        present = [u.client_id for u in updates]
        require_floor(self.plan, server_round, present, self.membership.absence)
        if not self._quorum_met(server_round, updates):
            return None, None
        noise = None
        if self._dp is not None:
            noise = RoundNoise(self._dp, noise_stream(self._noise_secret, server_round))
        self.state, info = server_step(
            self.state, updates, self.objectives, self.layout, self.plan.stage1, server_round, noise
        )
        self.rounds.append(info)
        if info.missing_objectives:
            self.notes.append(
                f"round {server_round}: no update for {', '.join(info.missing_objectives)}; "
                "their heads kept their last values"
            )
        LOGGER.info(
            "round %d: λ*=%s ‖d‖²=%.3g participants=%s%s",
            server_round,
            {k: round(v, 4) for k, v in info.lambdas.items()},
            info.d_sq_norm,
            list(info.participants),
            "" if info.epsilon is None else f" ε={info.epsilon:.4g}",
        )
        self.converged = info.d_sq_norm <= self.plan.stage1.epsilon
        self._save(server_round)
        if self._on_round is not None:
            self._on_round(info, time.time() - self._round_start)
        if self.converged:
            self._stopped = True
            LOGGER.info("round %d: ‖d‖² ≤ ε; Stage 1 converged", server_round)
        return model_arrays(self.state.params, self.state.buffers), round_metrics(
            info, self.objectives
        )

    def configure_evaluate(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        """No federated evaluation in Stage 1 (clients evaluate their Stage 2 models)."""
        return []

    def aggregate_evaluate(
        self, server_round: int, replies: Iterable[Message]
    ) -> MetricRecord | None:
        """Nothing to aggregate (see :meth:`configure_evaluate`)."""
        return None

    def _quorum_met(self, server_round: int, updates: list[ClientUpdate]) -> bool:
        """Whether k of n (``plan.min_per_round``) replied; if not, Stage 1 stops here."""
        k = self.plan.min_per_round
        if k is None or len(updates) >= k:
            return True
        text = (
            f"round {server_round}: {len(updates)} of the {k} clients needed replied within "
            f"{self.plan.round_timeout_s:g} s; Stage 1 stopped (w* is round "
            f"{server_round - 1}'s model)"
        )
        LOGGER.error(text)
        self.notes.append(text)
        self._stopped = True
        return False

    # ---- checkpoints ----------------------------------------------------------------------

    def _skips(self, server_round: int) -> bool:
        """Whether the round sends nothing: Stage 1 stopped, or the checkpoint holds it."""
        return self._stopped or server_round <= self.resumed_round

    def _restore(self) -> None:
        """Continue after the plan's checkpoint, if its file holds one of this run.

        Raises
        ------
        CheckpointError
            If the file is unreadable, belongs to another run, or cannot continue this one.
        """
        snap = restore_snapshot(self.plan, self.state)
        if snap is None:
            return
        self.state, self.rounds, self.notes = snap.state, list(snap.rounds), list(snap.notes)
        self.converged = snap.converged
        self.resumed_round = snap.round
        self._stopped = snap.converged or snap.round >= self.plan.stage1.rounds
        LOGGER.info(
            "Stage 1 resumed after round %d (checkpoint %s)", snap.round, self.plan.checkpoint_path
        )

    def _save(self, server_round: int) -> None:
        """Write the checkpoint of ``server_round`` (when the plan names a file)."""
        snap = Stage1Snapshot(
            server_round, self.state, tuple(self.rounds), self.converged, tuple(self.notes)
        )
        save_snapshot(self.plan, snap)

    # ---- membership -----------------------------------------------------------------------

    def _admit(self, server_round: int, arrays: ArrayRecord, grid: Grid) -> bool:
        """Handshakes and departures before a round; False when no client is left.

        Raises
        ------
        TooFewSites
            If fewer clients than the plan's floor joined (or are left to ask).
        """
        first = not self._started
        if first:
            self._started = True
            self.state.params, self.state.buffers = model_from_arrays(arrays)
            self.membership.discover(grid, wait_for_all=True)
        self.membership.drop_offline(server_round, grid.get_node_ids())
        self.membership.discover(grid, wait_for_all=False)
        require_floor(
            self.plan, None if first else server_round, self.clients.values(),
            self.membership.absence, verb="are left to ask",
        )  # fmt: skip
        return not self._stopped

    # ---- replies --------------------------------------------------------------------------

    def _collect(self, server_round: int, replies: Iterable[Message]) -> list[ClientUpdate]:
        """The round's valid updates; every error, bad reply and silence becomes a loss."""
        updates: list[ClientUpdate] = []
        answered: set[int] = set()
        for msg in replies:
            node = node_of(self._grid, msg)
            answered.add(node)
            client = self.clients.get(node)
            if msg.has_error():
                dropped = msg.error.code == self._node_unavailable
                self.membership.lose(
                    server_round, node, f"error {msg.error.code}: {error_text(msg.error)}", dropped
                )
                continue
            try:
                update = decode_client_update(msg.content, self.objectives)
            except ProtocolError as exc:
                self.membership.lose(server_round, node, f"malformed reply: {exc}", dropped=False)
                continue
            if client is not None and update.client_id != client:
                self.membership.lose(
                    server_round,
                    node,
                    f"replied as client {update.client_id}, handshake said {client}",
                    dropped=True,
                )
                continue
            updates.append(update)
        silent = sorted(set(self._asked) - answered)
        closed = f"within {self.plan.round_timeout_s:g} s"
        quorum = self.plan.round_quorum()
        if quorum is not None and len(answered) >= quorum.k:
            closed = f"by the round's deadline ({quorum.deadline_s:g} s)"
        for node in silent:
            self.membership.lose(server_round, node, f"no reply {closed}", dropped=False)
        self._asked = []
        return updates
