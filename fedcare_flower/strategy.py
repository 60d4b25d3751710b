"""FedCARE's Stage 1 server as a Flower :class:`~flwr.serverapp.strategy.Strategy`.

:meth:`FedCareStrategy.aggregate_train` decodes the replies and calls
:func:`fedcare_core.stage1.server_step` (per-objective aggregation, min-norm λ*, the global step
and ‖d‖²). The strategy keeps the :class:`~fedcare_core.stage1.ServerState` and the per-round
:class:`~fedcare_core.stage1.RoundInfo` list, so the run returns the same trace as the
in-process runner.

The round loop is Flower's own :meth:`Strategy.start <flwr.serverapp.strategy.Strategy.start>`;
what Algorithm 1 and the fault policy need beyond it lives in the hooks Flower's strategies
override. :meth:`FedCareStrategy.configure_train` first learns which client each node serves (a
``query`` handshake on the grid it is given: all K clients before round 1, new nodes before
later rounds) and drops nodes that left. :meth:`FedCareStrategy.aggregate_train` records *which*
clients did not answer. Stage 1 stops when ‖d‖² ≤ ε: Flower's loop has no early exit, so after
that round (or once no client is left) :meth:`configure_train` sends nothing and the remaining
iterations of Flower's loop neither send nor aggregate. The ServerApp runs it on a
:class:`~fedcare_flower.polling.PollingGrid` (:func:`fedcare_flower.server_app.run_server`),
which polls for replies at :attr:`RunPlan.pull_interval_s` rather than every 3 s, and names the
node behind each of the SuperLink's own error replies.

Faults: a client that returns an error (its ClientApp raised) or does not answer within the
round timeout is skipped for that round and asked again the next; a slow hospital is not
expelled for one slow round. A node the SuperLink reports unavailable (it missed its heartbeats:
Flower's ``NODE_UNAVAILABLE`` error code, read from Flower through
:mod:`fedcare_flower.flwr_internals`, or it no longer appears in ``grid.get_node_ids()``) is
dropped from the run; if its SuperNode reconnects it appears as a new node, answers the
handshake, and rejoins. Objectives with no replying client keep their heads
(``RoundInfo.missing_objectives``). Every loss is logged and kept in :attr:`notes` with the
round and the client.

Checkpoints: when the plan names a checkpoint file (``fedcare run --run-dir``), the strategy
writes a :class:`~fedcare_core.stage1.Stage1Snapshot` there after every round, with the core's
:func:`~fedcare_core.checkpoint.save_checkpoint` (atomic, owner-only). A strategy whose plan's
file already holds a checkpoint of the same run restores the server state, the trace and the
notes, and Flower's loop runs rounds ``1..r`` of the checkpoint as empty rounds (nothing sent,
nothing aggregated: the same mechanism as after convergence), so every later round keeps its
true number and each client's random streams, seeded by ``(seed, round, client)``, are those of
the uninterrupted run.

Differential privacy (``Stage1Config.privacy()``): the run's noise secret is drawn once, when
the strategy is built (the ``dp_noise_seed``, else 128 bits of OS entropy; it never leaves the
ServerApp), and round ``t`` is noised with ``noise_stream(secret, t)``, as
:func:`~fedcare_core.stage1.run_stage1` does. The accountant's state is the server state's
``dp_releases``, which the checkpoint keeps, so ε continues after a resume.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from flwr.app import ArrayRecord, ConfigRecord, Message, MessageType, MetricRecord
from flwr.serverapp import Grid
from flwr.serverapp.strategy import Strategy

from fedcare_core.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from fedcare_core.param_vectors import get_buffers, get_params, param_layout
from fedcare_core.privacy import noise_stream
from fedcare_core.stage1 import (
    ClientUpdate,
    RoundInfo,
    ServerState,
    Stage1Snapshot,
    build_model,
    check_snapshot,
    server_step,
)
from fedcare_core.stage1_privacy import RoundNoise
from fedcare_flower.baselines import encode_union_layout, plan_union_layout
from fedcare_flower.flwr_internals import node_unavailable_error_code
from fedcare_flower.messages import (
    ProtocolError,
    decode_client_update,
    decode_identity,
    encode_query,
    encode_train_instruction,
    model_arrays,
    model_from_arrays,
    round_metrics,
)
from fedcare_flower.polling import PollingGrid
from fedcare_flower.run_plan import RunPlan
from fedcare_flower.site_messages import SiteIdentity, site_identity, with_assignment

LOGGER = logging.getLogger(__name__)
#: Extra lifetime of an instruction beyond the round timeout, so a late node cannot act on it.
TTL_MARGIN_S = 30.0


@dataclass(frozen=True)
class ClientLoss:
    """A client that did not contribute to a round."""

    round: int
    client_id: int | None
    node_id: int
    reason: str
    dropped: bool
    #: How messages name the client (``site 'north'``); None: ``client <id>``.
    name: str | None = None

    def describe(self) -> str:
        """One line for logs and results."""
        who = f"client {self.client_id}" if self.client_id is not None else "unknown client"
        who = self.name or who
        what = "lost" if self.dropped else "skipped"
        return f"round {self.round}: {who} (node {self.node_id}) {what}: {self.reason}"


class FedCareStrategy(Strategy):
    """Stage 1 of FedCARE (paper Algorithm 1) on a Flower Grid.

    Run it with Flower's :meth:`~flwr.serverapp.strategy.Strategy.start` on a
    :class:`~fedcare_flower.polling.PollingGrid` (:func:`fedcare_flower.server_app.run_server`
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
        self.losses: list[ClientLoss] = []
        self.notes: list[str] = []
        self.converged = False
        self.clients: dict[int, int] = {}  # node id → client id, for nodes still in the run
        self._node_unavailable = node_unavailable_error_code()  # fails here, before any round
        self._seen: set[int] = set()  # every node id ever handshaken or dropped
        self._grid: Grid | None = None  # the grid of the round being waited on
        self._asked: list[int] = []  # nodes sent the round's instruction
        self._started = False
        self._stopped = False  # converged or no client left: later rounds send nothing
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
            for node in sorted(self.clients, key=self.clients.__getitem__)
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
        """
        if self._skips(server_round):
            return None, None
        updates = self._collect(server_round, replies)
        updates.sort(key=lambda u: u.client_id)
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

    # ---- checkpoints ----------------------------------------------------------------------

    def _skips(self, server_round: int) -> bool:
        """Whether the round sends nothing: Stage 1 stopped, or the checkpoint holds it."""
        return self._stopped or server_round <= self.resumed_round

    def _restore(self) -> None:
        """Continue after the plan's checkpoint, if its file holds one (of this run).

        Raises
        ------
        CheckpointError
            If the file is unreadable, belongs to another run, or cannot continue this one.
        """
        path = self.plan.checkpoint_path
        if path is None:
            return
        if self.plan.checkpoint_fingerprint is None:
            raise CheckpointError(f"plan names checkpoint {path} without the run's fingerprint")
        snap = load_checkpoint(Path(path), self.plan.checkpoint_fingerprint)
        if snap is None:
            return
        try:
            check_snapshot(snap, self.state, self.plan.stage1)
        except ValueError as exc:
            raise CheckpointError(f"checkpoint {path} cannot continue this run: {exc}") from None
        self.state = snap.state
        self.rounds = list(snap.rounds)
        self.notes = list(snap.notes)
        self.converged = snap.converged
        self.resumed_round = snap.round
        self._stopped = snap.converged or snap.round >= self.plan.stage1.rounds
        LOGGER.info("Stage 1 resumed after round %d (checkpoint %s)", snap.round, path)

    def _save(self, server_round: int) -> None:
        """Write the checkpoint of ``server_round`` (when the plan names a file)."""
        path, fingerprint = self.plan.checkpoint_path, self.plan.checkpoint_fingerprint
        if path is None or fingerprint is None:
            return
        snap = Stage1Snapshot(
            server_round, self.state, tuple(self.rounds), self.converged, tuple(self.notes)
        )
        save_checkpoint(Path(path), snap, fingerprint)

    # ---- membership -----------------------------------------------------------------------

    def _admit(self, server_round: int, arrays: ArrayRecord, grid: Grid) -> bool:
        """Handshakes and departures before a round; False when no client is left."""
        if not self._started:
            self._started = True
            self.state.params, self.state.buffers = model_from_arrays(arrays)
            self.discover(grid, wait_for_all=True)
        online = set(grid.get_node_ids())
        for node in [n for n in self.clients if n not in online]:
            self._lose(
                server_round, node, "left the federation (SuperLink: node offline)", dropped=True
            )
        self.discover(grid, wait_for_all=False)
        if not self.clients:
            self.notes.append(f"round {server_round}: no client left; Stage 1 stopped")
            LOGGER.error("round %d: no client left; Stage 1 stopped", server_round)
            self._stopped = True
        return not self._stopped

    def discover(self, grid: Grid, *, wait_for_all: bool) -> None:
        """Handshake with nodes not seen before, learning which client each serves.

        With ``wait_for_all`` it keeps polling until K clients are known or the start-up
        timeout expires (then proceeds with those present, noting the absent ones).
        """
        deadline = time.time() + self.plan.startup_timeout_s
        while True:
            new = [n for n in grid.get_node_ids() if n not in self._seen]
            if new:
                messages = [
                    Message(
                        encode_query(),
                        node,
                        MessageType.QUERY,
                        ttl=self.plan.startup_timeout_s + TTL_MARGIN_S,
                    )
                    for node in new
                ]
                remaining = max(deadline - time.time(), self.plan.pull_interval_s)
                wait = remaining if wait_for_all else self.plan.round_timeout_s
                self._register(grid, new, grid.send_and_receive(messages, timeout=wait))
            if not wait_for_all or len(self.clients) >= self.plan.num_clients:
                break
            if time.time() >= deadline:
                missing = [
                    self.plan.client_name(c)
                    for c in sorted(set(self.plan.client_ids) - set(self.clients.values()))
                ]
                self.notes.append(
                    f"start-up: {len(self.clients)} of {self.plan.num_clients} clients joined "
                    f"within {self.plan.startup_timeout_s:g} s; absent: {', '.join(missing)}"
                )
                LOGGER.warning(self.notes[-1])
                break
            time.sleep(max(self.plan.pull_interval_s, 0.2))

    def _register(self, grid: Grid, asked: Sequence[int], replies: Iterable[Message]) -> None:
        answered: set[int] = set()
        for msg in replies:
            node = _node_of(grid, msg)
            answered.add(node)
            self._seen.add(node)
            if msg.has_error():
                LOGGER.warning("handshake with node %d failed: %s", node, msg.error.reason)
                continue
            try:
                claimed = decode_identity(msg.content)
                site = site_identity(msg.content)
            except ProtocolError as exc:
                LOGGER.warning("node %d sent a malformed handshake: %s", node, exc)
                continue
            client_id = claimed if not self.plan.sites else self._site_client(node, site)
            if client_id is None:
                continue
            if client_id in self.clients.values():
                raise ProtocolError(f"two nodes claim client {client_id}")
            if client_id not in self.plan.client_ids:
                raise ProtocolError(f"node {node} claims unknown client {client_id}")
            self.clients[node] = client_id
        for node in [n for n in asked if n not in answered]:
            # not marked seen: a node that is slow to start is asked again next time
            LOGGER.warning("node %d did not answer the handshake in time", node)

    def _site_client(self, node: int, site: SiteIdentity | None) -> int | None:
        """The client id of the site a node names, or None (with a note) if it is refused.

        A node naming no site, a site that is not one of the run's, or a site prepared for
        another schema is refused (marked seen: it is not asked again). A second node naming
        a site already in the run (a site that reconnected before its old node was reported
        offline) is asked again at the next round.
        """
        plan = self.plan
        reason = None
        if site is None:
            reason = "names no site"
        elif site.name not in plan.sites:
            reason = f"names site {site.name!r}, which is not a site of this run"
        elif plan.schema_digest and site.schema_digest != plan.schema_digest:
            reason = f"site {site.name!r} was prepared for another federation schema"
        if reason is not None:
            self.notes.append(f"node {node} refused: {reason}")
            LOGGER.warning(self.notes[-1])
            return None
        assert site is not None
        client_id = plan.sites.index(site.name)
        if client_id in self.clients.values():
            LOGGER.warning("node %d: site %r is in the run already; asked again", node, site.name)
            self._seen.discard(node)
            return None
        return client_id

    # ---- replies --------------------------------------------------------------------------

    def _collect(self, server_round: int, replies: Iterable[Message]) -> list[ClientUpdate]:
        """The round's valid updates; every error, bad reply and silence becomes a loss."""
        updates: list[ClientUpdate] = []
        answered: set[int] = set()
        for msg in replies:
            node = _node_of(self._grid, msg)
            answered.add(node)
            client = self.clients.get(node)
            if msg.has_error():
                dropped = msg.error.code == self._node_unavailable
                self._lose(
                    server_round, node, f"error {msg.error.code}: {msg.error.reason}", dropped
                )
                continue
            try:
                update = decode_client_update(msg.content, self.objectives)
            except ProtocolError as exc:
                self._lose(server_round, node, f"malformed reply: {exc}", dropped=False)
                continue
            if client is not None and update.client_id != client:
                self._lose(
                    server_round,
                    node,
                    f"replied as client {update.client_id}, handshake said {client}",
                    dropped=True,
                )
                continue
            updates.append(update)
        timeout = self.plan.round_timeout_s
        for node in sorted(set(self._asked) - answered):
            self._lose(server_round, node, f"no reply within {timeout:g} s", dropped=False)
        self._asked = []
        return updates

    def _lose(self, server_round: int, node: int, reason: str, dropped: bool) -> None:
        client_id = self.clients.get(node)
        name = None if client_id is None else self.plan.client_name(client_id)
        loss = ClientLoss(server_round, client_id, node, reason, dropped, name)
        if dropped:
            self.clients.pop(node, None)
            self._seen.add(node)
        self.losses.append(loss)
        self.notes.append(loss.describe())
        LOGGER.warning(loss.describe())


def _node_of(grid: Grid | None, reply: Message) -> int:
    """The node a reply is about (the SuperLink's own error replies name only the message)."""
    if isinstance(grid, PollingGrid):
        return grid.node_of(reply)
    return reply.metadata.src_node_id
