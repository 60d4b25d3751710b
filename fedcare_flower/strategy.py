"""FedCARE's Stage 1 server as a Flower :class:`~flwr.serverapp.strategy.Strategy`.

:meth:`FedCareStrategy.aggregate_train` decodes the replies and calls
:func:`fedcare_core.stage1.server_step` (per-objective aggregation, min-norm λ*, the global step
and ‖d‖²). The strategy keeps the :class:`~fedcare_core.stage1.ServerState` and the per-round
:class:`~fedcare_core.stage1.RoundInfo` list, so the run returns the same trace as the
in-process runner.

:meth:`FedCareStrategy.start` replaces Flower's generic loop for three reasons that are part of
the algorithm or of fault handling, not of logging: Stage 1 stops when ‖d‖² ≤ ε (Algorithm 1);
the server must know which client each node serves, so it starts with a ``query`` handshake; and
the round's wait must record *which* clients did not answer. It waits with ``push_messages`` /
``pull_messages`` at :attr:`RunPlan.pull_interval_s` rather than ``send_and_receive``'s fixed
3-second sleep.

Faults: a client that returns an error (its ClientApp raised) or does not answer within the
round timeout is skipped for that round and asked again the next; a slow hospital is not
expelled for one slow round. A node the SuperLink reports unavailable (it missed its heartbeats:
Flower's ``NODE_UNAVAILABLE`` error, or it no longer appears in ``grid.get_node_ids()``) is
dropped from the run; if its SuperNode reconnects it appears as a new node, answers the
handshake, and rejoins. Objectives with no replying client keep their heads
(``RoundInfo.missing_objectives``). Every loss is logged and kept in :attr:`notes` with the
round and the client.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from flwr.app import ArrayRecord, ConfigRecord, Message, MessageType, MetricRecord
from flwr.serverapp import Grid
from flwr.serverapp.strategy import Result, Strategy

from fedcare_core.params import get_buffers, get_params, param_layout
from fedcare_core.stage1 import ClientUpdate, RoundInfo, ServerState, build_model, server_step
from fedcare_flower.baselines import encode_union_layout, plan_union_layout
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
from fedcare_flower.run_plan import RunPlan

LOGGER = logging.getLogger(__name__)
#: Flower's error code for a destination node that missed its heartbeats.
NODE_UNAVAILABLE = 5
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

    def describe(self) -> str:
        """One line for logs and results."""
        who = f"client {self.client_id}" if self.client_id is not None else "unknown client"
        what = "lost" if self.dropped else "skipped"
        return f"round {self.round}: {who} (node {self.node_id}) {what}: {self.reason}"


@dataclass
class _Exchange:
    """Replies of one push/pull exchange and the nodes that did not answer in time."""

    replies: list[Message]
    unanswered: list[int]


class FedCareStrategy(Strategy):
    """Stage 1 of FedCARE (paper Algorithm 1) on a Flower Grid.

    Parameters
    ----------
    plan
        Objectives, model and Stage 1 configuration, seed, K and timeouts.
    on_round
        Called with each round's :class:`RoundInfo` after the global step (the ServerApp
        uses it to stream progress to disk).
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
        self._seen: set[int] = set()  # every node id ever handshaken or dropped
        self._in_flight: dict[str, int] = {}  # message id → node id of the round being waited on
        self._on_round = on_round
        # FMGDA/FSMGDA: Algorithm 1 on the baselines' union vectors (each client embeds its own)
        self._union_layout = None
        if plan.union_common_width is not None:
            self._union_layout = encode_union_layout(plan_union_layout(plan))

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

    def initial_arrays(self) -> ArrayRecord:
        """``w^0`` (built from the experiment seed, as the in-process runner does)."""
        return model_arrays(self.state.params, self.state.buffers)

    def configure_train(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        """One ``train`` message per client still in the run, carrying ``w^t``."""
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
        return [
            Message(content, node, MessageType.TRAIN, group_id=str(server_round), ttl=ttl)
            for node in sorted(self.clients, key=self.clients.__getitem__)
        ]

    def aggregate_train(
        self, server_round: int, replies: Iterable[Message]
    ) -> tuple[ArrayRecord | None, MetricRecord | None]:
        """Decode the replies, run the core's server step, and return ``w^{t+1}`` and λ*.

        Replies are ordered by client id before aggregation, so the floating-point sums are
        the in-process runner's, whichever order the replies arrived in.
        """
        updates: list[ClientUpdate] = []
        answered: set[int] = set()
        for msg in replies:
            node = self._in_flight.get(msg.metadata.reply_to_message_id, msg.metadata.src_node_id)
            answered.add(node)
            client = self.clients.get(node)
            if msg.has_error():
                dropped = msg.error.code == NODE_UNAVAILABLE
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
        for node in set(self._in_flight.values()) - answered:
            timeout = self.plan.round_timeout_s
            self._lose(server_round, node, f"no reply within {timeout:g} s", dropped=False)
        self._in_flight = {}
        updates.sort(key=lambda u: u.client_id)
        self.state, info = server_step(
            self.state, updates, self.objectives, self.layout, self.plan.stage1, server_round
        )
        self.rounds.append(info)
        if info.missing_objectives:
            self.notes.append(
                f"round {server_round}: no update for {', '.join(info.missing_objectives)}; "
                "their heads kept their last values"
            )
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

    def start(
        self,
        grid: Grid,
        initial_arrays: ArrayRecord,
        num_rounds: int = 3,
        timeout: float = 3600,
        train_config: ConfigRecord | None = None,
        evaluate_config: ConfigRecord | None = None,
        evaluate_fn: Callable[[int, ArrayRecord], MetricRecord | None] | None = None,
    ) -> Result:
        """Handshake, then rounds until ‖d‖² ≤ ε or ``num_rounds``.

        ``timeout`` is the per-round wait; the evaluation arguments are accepted for API
        compatibility and unused.
        """
        self.summary()
        result = Result()
        arrays = initial_arrays
        self.state.params, self.state.buffers = model_from_arrays(initial_arrays)
        self.discover(grid, wait_for_all=True)
        for t in range(1, num_rounds + 1):
            online = set(grid.get_node_ids())
            for node in [n for n in self.clients if n not in online]:
                self._lose(t, node, "left the federation (SuperLink: node offline)", dropped=True)
            self.discover(grid, wait_for_all=False)
            if not self.clients:
                self.notes.append(f"round {t}: no client left; Stage 1 stopped")
                LOGGER.error("round %d: no client left; Stage 1 stopped", t)
                break
            t0 = time.time()
            messages = list(self.configure_train(t, arrays, train_config or ConfigRecord(), grid))
            exchange = self._exchange(grid, messages, timeout)
            agg_arrays, metrics = self.aggregate_train(t, exchange.replies)
            if agg_arrays is not None:
                arrays = result.arrays = agg_arrays
            if metrics is not None:
                result.train_metrics_clientapp[t] = metrics
            info = self.rounds[-1]
            LOGGER.info(
                "round %d: λ*=%s ‖d‖²=%.3g participants=%s",
                t,
                {k: round(v, 4) for k, v in info.lambdas.items()},
                info.d_sq_norm,
                list(info.participants),
            )
            if self._on_round is not None:
                self._on_round(info, time.time() - t0)
            if info.d_sq_norm <= self.plan.stage1.epsilon:
                self.converged = True
                break
        return result

    # ---- transport ------------------------------------------------------------------------

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
                exchange = self._exchange(grid, messages, wait)
                self._register(exchange)
            if not wait_for_all or len(self.clients) >= self.plan.num_clients:
                break
            if time.time() >= deadline:
                missing = sorted(set(range(self.plan.num_clients)) - set(self.clients.values()))
                self.notes.append(
                    f"start-up: {len(self.clients)} of {self.plan.num_clients} clients joined "
                    f"within {self.plan.startup_timeout_s:g} s; absent: {missing}"
                )
                LOGGER.warning(self.notes[-1])
                break
            time.sleep(max(self.plan.pull_interval_s, 0.2))
        self._in_flight = {}

    def _register(self, exchange: _Exchange) -> None:
        for msg in exchange.replies:
            node = self._in_flight[msg.metadata.reply_to_message_id]
            self._seen.add(node)
            if msg.has_error():
                LOGGER.warning("handshake with node %d failed: %s", node, msg.error.reason)
                continue
            try:
                client_id, _ = decode_identity(msg.content)
            except ProtocolError as exc:
                LOGGER.warning("node %d sent a malformed handshake: %s", node, exc)
                continue
            if client_id in self.clients.values():
                raise ProtocolError(f"two nodes claim client {client_id}")
            if not 0 <= client_id < self.plan.num_clients:
                raise ProtocolError(f"node {node} claims unknown client {client_id}")
            self.clients[node] = client_id
        for node in exchange.unanswered:
            # not marked seen: a node that is slow to start is asked again next time
            LOGGER.warning("node %d did not answer the handshake in time", node)

    def _exchange(self, grid: Grid, messages: Sequence[Message], timeout: float) -> _Exchange:
        """Push ``messages`` and pull replies until all arrived or ``timeout`` seconds pass."""
        if not messages:
            return _Exchange([], [])
        ids = list(grid.push_messages(messages))
        self._in_flight = {
            mid: msg.metadata.dst_node_id for mid, msg in zip(ids, messages, strict=True)
        }
        pending = set(ids)
        replies: list[Message] = []
        deadline = time.time() + timeout
        while pending:
            for reply in grid.pull_messages(pending):
                if reply.metadata.reply_to_message_id in pending:
                    pending.discard(reply.metadata.reply_to_message_id)
                    replies.append(reply)
            if not pending or time.time() >= deadline:
                break
            time.sleep(self.plan.pull_interval_s)
        return _Exchange(replies, [self._in_flight[m] for m in sorted(pending)])

    def _lose(self, server_round: int, node: int, reason: str, dropped: bool) -> None:
        loss = ClientLoss(server_round, self.clients.get(node), node, reason, dropped)
        if dropped:
            self.clients.pop(node, None)
            self._seen.add(node)
        self.losses.append(loss)
        self.notes.append(loss.describe())
        LOGGER.warning(loss.describe())
