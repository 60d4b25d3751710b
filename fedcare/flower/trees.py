"""fedxgb over Flower: Flower's ``FedXgbBagging`` with the core's trees on both sides.

The server runs :class:`flwr.serverapp.strategy.FedXgbBagging` (Flower's round loop, node
sampling and message construction; every connected node each round, once all K have joined)
subclassed in one place: :class:`TreeBagging` sends one XGBoost JSON model per objective
instead of Flower's one, and replaces the tree concatenation and the metric averaging by the
core's :class:`~fedcare_core.algorithms.fedxgb.rounds.TreeServer`, so the trees, the round
record and the round each objective keeps are the in-process ones. Flower's evaluate step of
each round carries the holders' validation losses that choose the kept round.

Cyclic boosting (``fedxgb_strategy = "cyclic"``) runs over the same strategy: every node
receives the round, and only the client whose turn it is (the round's plan names it) boosts;
the others answer with no trees. Flower's ``FedXgbCyclic`` samples one node a round, but a
node's client id is only known from its replies, and the core walks clients in id order.

A client keeps its rows' margins between rounds in its process (keyed by the run's id); a
client served by another process scores the whole ensemble afresh, to the same numbers
(:class:`~fedcare_core.algorithms.fedxgb.trees.Ensemble`'s round blocks). The whole ensemble
goes out every round, as Flower's XGBoost strategies send the global model.

Wire format (``train`` and ``evaluate`` messages; Flower adds ``server-round``)
    ``"arrays"`` ArrayRecord: ``<objective>`` → uint8 XGBoost JSON of that objective's
    ensemble (absent before its first round).
    ``"config"`` ConfigRecord: ``protocol``, ``algorithm`` (``fedxgb``), ``run-id``, ``seed``,
    ``objectives``, ``kinds``, ``baseline-config`` (JSON), ``boost`` (UTF-8 JSON bytes:
    client id → objective → the trees' learning rate; train only).
Reply to ``train``
    ``"arrays"``: ``<objective>`` → uint8 XGBoost JSON of the client's new trees.
    ``"metrics"``: ``client-id``, ``num-examples`` (training rows), and per objective boosted
    ``rows.<s>`` and ``loss.<s>`` (its training loss before its new trees).
Reply to ``evaluate``
    ``"metrics"``: ``client-id``, ``num-examples``, and per objective scored ``rows.<s>`` and
    ``loss.<s>`` (the ensemble's loss on its labelled validation rows).
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict
from typing import cast

import numpy as np
import xgboost as xgb
from flwr.app import (
    Array,
    ArrayRecord,
    ConfigRecord,
    ConfigRecordValues,
    Message,
    MetricRecord,
    MetricRecordValues,
    RecordDict,
)
from flwr.serverapp import Grid
from flwr.serverapp.strategy import FedAvg, FedXgbBagging

from fedcare.flower.messages import (
    ARRAYS,
    CLIENT_ID,
    CONFIG,
    METRICS,
    NUM_EXAMPLES,
    PROTOCOL,
    PROTOCOL_VERSION,
    SERVER_ROUND,
    ProtocolError,
)
from fedcare.flower.run_plan import RunPlan
from fedcare_core.algorithms.fedxgb.bundle import pack_trees
from fedcare_core.algorithms.fedxgb.rounds import (
    ClientMargins,
    ClientTrees,
    TreeServer,
    client_round,
    client_scores,
)
from fedcare_core.algorithms.fedxgb.trees import Ensemble, TreeSettings
from fedcare_core.config import BaselineConfig
from fedcare_core.data.clients import ClientData
from fedcare_core.stage1.loop import RoundInfo, ServerState

LOGGER = logging.getLogger(__name__)

#: The algorithm whose rounds this module runs.
ALGORITHM = "fedxgb"
_ALGORITHM_KEY = "algorithm"
_RUN_ID = "run-id"
_BOOST = "boost"
_ROWS = "rows."
_LOSS = "loss."

RoundHook = Callable[[RoundInfo, float], None]

# A client's margins, kept between the messages of one run (a long-lived client process).
_MARGINS: dict[tuple[str, str], ClientMargins] = {}


def is_trees_message(content: RecordDict) -> bool:
    """Whether a message is a fedxgb round's."""
    config = content.config_records.get(CONFIG)
    return config is not None and config.get(_ALGORITHM_KEY) == ALGORITHM


# ---- wire format --------------------------------------------------------------------------


def _bytes_array(raw: bytes) -> Array:
    return Array(np.frombuffer(raw, dtype=np.uint8).copy())


def ensembles_arrays(ensembles: Mapping[str, Ensemble]) -> ArrayRecord:
    """Each objective's ensemble as uint8 XGBoost JSON."""
    return ArrayRecord({s: _bytes_array(e.to_json()) for s, e in ensembles.items()})


def _raw(record: ArrayRecord, key: str) -> bytes:
    array = record[key].numpy()
    if array.dtype != np.uint8 or array.ndim != 1:
        raise ProtocolError(f"array {key!r} must be 1-d uint8 bytes, got {array.dtype}")
    return array.tobytes()


def ensembles_from_arrays(record: ArrayRecord, kinds: Mapping[str, str]) -> dict[str, Ensemble]:
    """Inverse of :func:`ensembles_arrays` (objectives without an ensemble are absent)."""
    unknown = sorted(set(record) - set(kinds))
    if unknown:
        raise ProtocolError(f"ensembles of unknown objectives {unknown}")
    return {s: Ensemble.from_json(kinds[s], _raw(record, s)) for s in record}


def trees_config(plan: RunPlan, run_id: str) -> dict[str, ConfigRecordValues]:
    """What every message of the run carries in its config (module docstring)."""
    return {
        PROTOCOL: PROTOCOL_VERSION,
        _ALGORITHM_KEY: ALGORITHM,
        _RUN_ID: run_id,
        "seed": int(plan.seed),
        "objectives": [n for n, _ in plan.objectives],
        "kinds": [k for _, k in plan.objectives],
        "baseline-config": json.dumps(asdict(plan.baselines or BaselineConfig())),
    }


def _encode_plan(plan: Mapping[int, Mapping[str, TreeSettings]]) -> bytes:
    doc = {str(k): {s: v.eta for s, v in boosting.items()} for k, boosting in plan.items()}
    return json.dumps(doc, sort_keys=True).encode()


# ---- client -------------------------------------------------------------------------------


class _Instruction:
    """A decoded fedxgb message."""

    def __init__(self, content: RecordDict) -> None:
        try:
            config = content.config_records[CONFIG]
            if config[PROTOCOL] != PROTOCOL_VERSION:
                raise ProtocolError(f"protocol {config[PROTOCOL]!r} is not {PROTOCOL_VERSION}")
            names = cast(list[str], config["objectives"])
            self.kinds = dict(zip(names, cast(list[str], config["kinds"]), strict=True))
            self.base = BaselineConfig(**json.loads(cast(str, config["baseline-config"])))
            self.seed = int(cast(int, config["seed"]))
            self.run_id = str(config[_RUN_ID])
            self.round = int(cast(int, config[SERVER_ROUND]))
            raw_plan = cast(bytes, config.get(_BOOST, b"{}"))
        except KeyError as exc:
            raise ProtocolError(f"fedxgb message lacks {exc}") from None
        record = content.array_records.get(ARRAYS, ArrayRecord())
        self.ensembles = ensembles_from_arrays(record, self.kinds)
        self.plan = {int(k): v for k, v in json.loads(raw_plan.decode()).items()}

    def boosting(self, client_id: int) -> dict[str, TreeSettings]:
        """The objectives client ``client_id`` boosts this round, with their settings."""
        depth = self.base.fedxgb_depth
        mine = self.plan.get(client_id, {})
        return {
            s: TreeSettings(self.kinds[s], float(eta), depth, self.seed) for s, eta in mine.items()
        }


def _margins(run_id: str, data_key: str) -> ClientMargins:
    """The client's margins of this run (a new run drops the node's margins of earlier runs)."""
    key = (run_id, data_key)
    if key not in _MARGINS:
        for stale in [k for k in _MARGINS if k[1] == data_key]:
            del _MARGINS[stale]
        _MARGINS[key] = ClientMargins()
    return _MARGINS[key]


def trees_train(client: ClientData, data_key: str, content: RecordDict) -> RecordDict:
    """A client's fedxgb round: its new trees of each objective the round's plan gives it."""
    instr = _Instruction(content)
    margins = _margins(instr.run_id, data_key)
    boosting = instr.boosting(client.client_id)
    replies = client_round(
        client, instr.ensembles, boosting, margins, instr.base.fedxgb_local_trees
    )
    arrays = {s: _bytes_array(bytes(r.booster.save_raw("json"))) for s, r in replies.items()}
    metrics = _metrics(client, {s: (r.rows, r.loss) for s, r in replies.items()})
    return RecordDict({ARRAYS: ArrayRecord(arrays), METRICS: metrics})


def trees_evaluate(client: ClientData, data_key: str, content: RecordDict) -> RecordDict:
    """A client's validation losses of the round's ensembles (of its own objectives)."""
    instr = _Instruction(content)
    scores = client_scores(client, instr.ensembles, _margins(instr.run_id, data_key))
    return RecordDict({METRICS: _metrics(client, scores)})


def _metrics(client: ClientData, pairs: Mapping[str, tuple[int, float]]) -> MetricRecord:
    values: dict[str, MetricRecordValues] = {
        CLIENT_ID: client.client_id,
        NUM_EXAMPLES: client.train.n,
    }
    for s, (rows, loss) in pairs.items():
        values[_ROWS + s], values[_LOSS + s] = int(rows), float(loss)
    return MetricRecord(values)


def _pairs(metrics: MetricRecord, objectives: Iterable[str]) -> dict[str, tuple[int, float]]:
    return {
        s: (int(cast(int, metrics[_ROWS + s])), float(cast(float, metrics[_LOSS + s])))
        for s in objectives
        if _ROWS + s in metrics
    }


# ---- server -------------------------------------------------------------------------------


class TreeBagging(FedXgbBagging):
    """Flower's FedXgbBagging running the core's :class:`TreeServer` (module docstring).

    Parameters
    ----------
    plan
        The run plan (objectives, holders, seed, ``baselines``' fedxgb settings, K).
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
        base = plan.baselines or BaselineConfig()
        self.server = TreeServer(plan.kinds, dict(plan.holders), plan.client_ids, base, plan.seed)
        self.run_id = uuid.uuid4().hex
        self.notes: list[str] = []
        self.converged = False
        self._on_round = on_round
        self._round_start = 0.0
        self._asked: list[int] = []

    # What the result folder keeps (fedcare.flower.final_model.Stage1Outcome).
    @property
    def rounds(self) -> list[RoundInfo]:
        """The rounds so far."""
        return self.server.rounds

    @property
    def state(self) -> ServerState:
        """The trees so far as the result's parameters (:func:`pack_trees`)."""
        return ServerState(pack_trees(self.server.result()), np.zeros(0, dtype=np.float32))

    def initial_arrays(self) -> ArrayRecord:
        """No ensemble yet."""
        return ArrayRecord()

    def train_config(self) -> ConfigRecord:
        """The config every message carries."""
        return ConfigRecord(trees_config(self.plan, self.run_id))

    def configure_train(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        """Flower's messages, with the ensembles and the round's boosting plan."""
        self._round_start = time.time()
        plan = self.server.plan(server_round)
        self._asked = sorted(plan)
        config = ConfigRecord({**dict(config), _BOOST: _encode_plan(plan)})
        ensembles = ensembles_arrays(self.server.present())
        return FedAvg.configure_train(self, server_round, ensembles, config, grid)

    def aggregate_train(
        self, server_round: int, replies: Iterable[Message]
    ) -> tuple[ArrayRecord | None, MetricRecord | None]:
        """The core's aggregation of the replies' trees (client-id order)."""
        by_client: dict[int, dict[str, ClientTrees]] = {}
        for msg in self._valid(server_round, replies):
            metrics = msg.content.metric_records[METRICS]
            k = int(cast(int, metrics[CLIENT_ID]))
            arrays = msg.content.array_records.get(ARRAYS, ArrayRecord())
            by_client[k] = {
                s: ClientTrees(k, _booster(_raw(arrays, s)), rows, loss)
                for s, (rows, loss) in _pairs(metrics, self.server.kinds).items()
            }
        info = self.server.aggregate(server_round, by_client, self._asked)
        metrics = MetricRecord({_LOSS + s: float(v) for s, v in info.losses.items()})
        return ensembles_arrays(self.server.present()), metrics

    def configure_evaluate(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        """Flower's evaluate messages, with the round's ensembles and the run's config."""
        ensembles = ensembles_arrays(self.server.present())
        return FedAvg.configure_evaluate(self, server_round, ensembles, self.train_config(), grid)

    def aggregate_evaluate(
        self, server_round: int, replies: Iterable[Message]
    ) -> MetricRecord | None:
        """The holders' validation losses: the core records them and offers the round."""
        scores = {}
        for msg in self._valid(server_round, replies):
            metrics = msg.content.metric_records[METRICS]
            scores[int(cast(int, metrics[CLIENT_ID]))] = _pairs(metrics, self.server.kinds)
        checked = self.server.record_validation(server_round, scores)
        if self._on_round is not None:
            self._on_round(self.server.rounds[-1], time.time() - self._round_start)
        finite: dict[str, MetricRecordValues] = {
            f"val-{_LOSS}{s}": float(v) for s, v in checked.items() if np.isfinite(v)
        }
        return MetricRecord(finite)

    def _valid(self, server_round: int, replies: Iterable[Message]) -> list[Message]:
        replies = list(replies)
        for msg in replies:
            if msg.has_error():
                self._note(
                    f"round {server_round}: node {msg.metadata.src_node_id} failed: "
                    f"{msg.error.reason}"
                )
        return [m for m in replies if not m.has_error()]

    def _note(self, text: str) -> None:
        self.notes.append(text)
        LOGGER.warning(text)


def _booster(raw: bytes) -> xgb.Booster:
    booster = xgb.Booster()
    booster.load_model(bytearray(raw))
    return booster
