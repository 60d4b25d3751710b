"""fedxgb's ServerApp strategy: Flower's ``FedXgbBagging`` running the core's ``TreeServer``.

:class:`TreeBagging` keeps Flower's round loop (:meth:`~flwr.serverapp.strategy.Strategy.start`:
train, aggregate, evaluate, aggregate each round) and overrides what FedXgbBagging sends and
aggregates (the wire format is :mod:`fedcare.flower.fedxgb.trees`'s). Like FedCARE's strategy it
learns which client each node serves by the ``query`` handshake
(:class:`~fedcare.flower.membership.Membership`: a site's node names its site), tells each
node its client id in every message, and notes every client that fails, leaves or stays
silent; a round then goes on with the clients that answered (a missing holder boosts nothing
that round) unless they are fewer than the plan's floor (a federation's ``--min-sites``:
:mod:`fedcare.flower.round_floor`), which ends the run without aggregating the round. In a
federation of sites (``plan.broadcast``) the trees of the chosen rounds go to every site at the
end, as ``w*`` does for FedCARE.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import cast

import numpy as np
from flwr.app import (
    ArrayRecord,
    ConfigRecord,
    ConfigRecordValues,
    Message,
    MessageType,
    MetricRecord,
    MetricRecordValues,
    RecordDict,
)
from flwr.serverapp import Grid
from flwr.serverapp.strategy import FedXgbBagging

from fedcare.flower.federated_rounds import RoundHook
from fedcare.flower.fedxgb.trees import (
    BOOST,
    LOSS,
    booster_of,
    encode_boosting,
    ensembles_arrays,
    reply_pairs,
    trees_config,
)
from fedcare.flower.membership import TTL_MARGIN_S, Membership, node_of
from fedcare.flower.messages import ARRAYS, CLIENT_ID, CONFIG, METRICS, SERVER_ROUND, ProtocolError
from fedcare.flower.round_floor import require_floor
from fedcare.flower.run_plan import RunPlan
from fedcare.flower.site_errors import error_text
from fedcare.flower.site_messages import with_assignment
from fedcare_core.algorithms.fedxgb.bundle import pack_trees
from fedcare_core.algorithms.fedxgb.rounds import ClientTrees, TreeServer
from fedcare_core.config.method_options import baselines
from fedcare_core.stage1.loop import RoundInfo, ServerState

LOGGER = logging.getLogger(__name__)


class TreeBagging(FedXgbBagging):
    """Flower's FedXgbBagging running the core's :class:`TreeServer` (module docstring).

    Parameters
    ----------
    plan
        The run plan (objectives, holders, seed, ``baselines``' fedxgb settings, K, sites).
    on_round
        Called with each round's :class:`RoundInfo` and wall time after its evaluation.
    """

    def __init__(self, plan: RunPlan, *, on_round: RoundHook | None = None) -> None:
        k = plan.num_clients
        super().__init__(
            fraction_train=1.0,
            fraction_evaluate=1.0,
            min_train_nodes=k,
            min_evaluate_nodes=k,
            min_available_nodes=k,
        )
        self.plan = plan
        base = plan.baselines or baselines()
        self.server = TreeServer(plan.kinds, dict(plan.holders), plan.client_ids, base, plan.seed)
        self.run_id = uuid.uuid4().hex
        self.notes: list[str] = []
        self.converged = False
        self.membership = Membership(plan, self.notes.append)
        self._on_round = on_round
        self._round_start = 0.0
        self._started = False
        self._grid: Grid | None = None
        self._asked: dict[str, list[int]] = {}  # message type → the nodes sent one
        self._boosting: list[int] = []  # the round's clients asked to boost

    # ---- what the result folder and the broadcast read (fedcare.flower.final_model) --------

    @property
    def rounds(self) -> list[RoundInfo]:
        """The rounds so far."""
        return self.server.rounds

    @property
    def state(self) -> ServerState:
        """The trees of the chosen rounds as the result's parameters (:func:`pack_trees`)."""
        return ServerState(pack_trees(self.server.result()), np.zeros(0, dtype=np.float32))

    @property
    def clients(self) -> dict[int, int]:
        """Node id → client id of the nodes still in the run."""
        return self.membership.clients

    # ---- the round loop --------------------------------------------------------------------

    def initial_arrays(self) -> ArrayRecord:
        """No ensemble yet."""
        return ArrayRecord()

    def train_config(self) -> ConfigRecord:
        """The config every message carries."""
        return ConfigRecord(trees_config(self.plan, self.run_id))

    def configure_train(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        """One ``train`` message per client in the run: the ensembles and who boosts what."""
        self._grid = grid
        self._round_start = time.time()
        first = not self._started
        if first:
            self._started = True
            self.membership.discover(grid, wait_for_all=True)
        self.membership.drop_offline(server_round, grid.get_node_ids())
        self.membership.discover(grid, wait_for_all=False)
        require_floor(
            self.plan, None if first else server_round, self.clients.values(),
            self.membership.absence, verb="are left to ask",
        )  # fmt: skip
        present = set(self.clients.values())
        boosting = {k: v for k, v in self.server.plan(server_round).items() if k in present}
        self._boosting = sorted(boosting)

        def config_of(client: int) -> ConfigRecord:
            # Each client learns only what it boosts, not what the others pursue.
            own = {client: boosting[client]} if client in boosting else {}
            extra: dict[str, ConfigRecordValues] = {
                BOOST: encode_boosting(own),
                SERVER_ROUND: server_round,
            }
            return ConfigRecord({**dict(config), **extra})

        # ``arrays``: the ensembles aggregate_train returned last (none before round 1).
        return self._messages(arrays, config_of, MessageType.TRAIN, server_round)

    def aggregate_train(
        self, server_round: int, replies: Iterable[Message]
    ) -> tuple[ArrayRecord | None, MetricRecord | None]:
        """The core's aggregation of the replies' trees (client-id order).

        Raises
        ------
        TooFewSites
            If fewer clients replied than the plan's floor: nothing is aggregated.
        """
        by_client: dict[int, dict[str, ClientTrees]] = {}
        for k, content in self._collect(server_round, replies, "train"):
            arrays = content.array_records.get(ARRAYS, ArrayRecord())
            pairs = reply_pairs(content.metric_records[METRICS], self.server.kinds)
            by_client[k] = {
                s: ClientTrees(k, booster_of(arrays, s), rows, loss)
                for s, (rows, loss) in pairs.items()
            }
        require_floor(self.plan, server_round, by_client, self.membership.absence)
        info = self.server.aggregate(server_round, by_client, self._boosting)
        metrics = MetricRecord({LOSS + s: float(v) for s, v in info.losses.items()})
        return ensembles_arrays(self.server.present()), metrics

    def configure_evaluate(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        """One ``evaluate`` message per client in the run: the round's ensembles (``arrays``)."""
        evaluate = ConfigRecord({**dict(self.train_config()), SERVER_ROUND: server_round})
        return self._messages(arrays, lambda _client: evaluate, MessageType.EVALUATE, server_round)

    def aggregate_evaluate(
        self, server_round: int, replies: Iterable[Message]
    ) -> MetricRecord | None:
        """The holders' validation losses: the core records them and offers the round.

        Raises
        ------
        TooFewSites
            If fewer clients replied than the plan's floor: the round is not offered.
        """
        scores = {
            k: reply_pairs(content.metric_records[METRICS], self.server.kinds)
            for k, content in self._collect(server_round, replies, "evaluate")
        }
        require_floor(self.plan, server_round, scores, self.membership.absence)
        checked = self.server.record_validation(server_round, scores)
        if self._on_round is not None:
            self._on_round(self.server.rounds[-1], time.time() - self._round_start)
        finite: dict[str, MetricRecordValues] = {
            f"val-{LOSS}{s}": float(v) for s, v in checked.items() if np.isfinite(v)
        }
        return MetricRecord(finite)

    # ---- messages and replies --------------------------------------------------------------

    def _messages(
        self,
        arrays: ArrayRecord,
        config_of: Callable[[int], ConfigRecord],
        kind: str,
        server_round: int,
    ) -> list[Message]:
        """One message of ``kind`` per node in the run, telling it its client id."""
        ttl = self.plan.round_timeout_s + TTL_MARGIN_S
        messages = []
        for node in self.membership.nodes_by_client():
            client = self.clients[node]
            content = RecordDict({ARRAYS: arrays, CONFIG: config_of(client)})
            messages.append(
                Message(
                    with_assignment(content, client),
                    node,
                    kind,
                    group_id=str(server_round),
                    ttl=ttl,
                )
            )
        self._asked[kind] = [m.metadata.dst_node_id for m in messages]
        return messages

    def _collect(
        self, server_round: int, replies: Iterable[Message], kind: str
    ) -> Sequence[tuple[int, RecordDict]]:
        """Each valid reply with its client id; every error, bad reply and silence is noted."""
        out: list[tuple[int, RecordDict]] = []
        answered: set[int] = set()
        for msg in replies:
            node = node_of(self._grid, msg)
            answered.add(node)
            client = self.clients.get(node)
            if msg.has_error():
                reason = f"{kind}: error {msg.error.code}: {error_text(msg.error)}"
                self.membership.lose(server_round, node, reason, dropped=False)
                continue
            try:
                claimed = int(cast(int, msg.content.metric_records[METRICS][CLIENT_ID]))
            except (KeyError, ProtocolError) as exc:
                self.membership.lose(server_round, node, f"malformed reply: {exc}", dropped=False)
                continue
            if client is None or claimed != client:
                reason = f"replied as client {claimed}, handshake said {client}"
                self.membership.lose(server_round, node, reason, dropped=True)
                continue
            out.append((client, msg.content))
        for node in sorted(set(self._asked.get(kind, [])) - answered):
            reason = f"{kind}: no reply within {self.plan.round_timeout_s:g} s"
            self.membership.lose(server_round, node, reason, dropped=False)
        return out
