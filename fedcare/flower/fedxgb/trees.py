"""fedxgb over Flower: the wire format and the ClientApp's side.

The ServerApp's strategy is :class:`fedcare.flower.fedxgb.strategy.TreeBagging`, Flower's
``FedXgbBagging`` running the core's :class:`~fedcare_core.algorithms.fedxgb.rounds.TreeServer`:
one XGBoost JSON model per objective instead of Flower's one, the core's aggregation instead
of its tree concatenation, and Flower's evaluate step carrying the holders' validation losses
that choose the kept round, so the trees, the round record and the round each objective keeps
are the in-process ones.

Cyclic boosting (``fedxgb_strategy = "cyclic"``) runs over the same strategy: every node
receives the round, and only the client whose turn it is (the round's plan names it) boosts;
the others answer with no trees. Flower's ``FedXgbCyclic`` samples one node a round, but the
core walks clients in id order, and a node's client id is known from the handshake.

A client keeps its rows' margins between rounds in its process (keyed by the run's id); a
client served by another process (a forked ClientApp task) scores the whole ensemble afresh,
to the same numbers (:class:`~fedcare_core.algorithms.fedxgb.trees.Ensemble`'s round blocks).
The whole ensemble goes out every round, as Flower's XGBoost strategies send the global model.

Wire format (``train`` and ``evaluate`` messages, each with the node's client id assigned)
    ``"arrays"`` ArrayRecord: ``<objective>`` → uint8 XGBoost JSON of that objective's
    ensemble (absent before its first round).
    ``"config"`` ConfigRecord: ``protocol``, ``algorithm`` (``fedxgb``), ``run-id``, ``seed``,
    ``objectives``, ``kinds``, ``baseline-config`` (JSON), ``server-round``, ``boost`` (UTF-8
    JSON bytes: the node's own client id → objective → the trees' learning rate, empty when it
    boosts nothing this round; train only).
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
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from typing import cast

import numpy as np
import xgboost as xgb
from flwr.app import (
    Array,
    ArrayRecord,
    ConfigRecordValues,
    MetricRecord,
    MetricRecordValues,
    RecordDict,
)

from fedcare.flower.federated_rounds import ALGORITHM_KEY
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
from fedcare_core.algorithms.fedxgb.options import FedXgbOptions
from fedcare_core.algorithms.fedxgb.rounds import (
    ClientMargins,
    client_round,
    client_scores,
)
from fedcare_core.algorithms.fedxgb.trees import Ensemble, TreeSettings
from fedcare_core.config.method_options import baselines
from fedcare_core.data.clients import ClientData

_RUN_ID = "run-id"
#: Config key of a round's boosting plan; metric prefixes of a reply's rows and losses.
BOOST = "boost"
_ROWS = "rows."
LOSS = "loss."

# A client's margins, kept between the messages of one run (a long-lived client process).
_MARGINS: dict[tuple[str, str], ClientMargins] = {}


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
        ALGORITHM_KEY: plan.algorithm,  # the rounds a client answers: federated_rounds
        _RUN_ID: run_id,
        "seed": int(plan.seed),
        "objectives": [n for n, _ in plan.objectives],
        "kinds": [k for _, k in plan.objectives],
        "baseline-config": json.dumps(asdict(plan.baselines or baselines())),
    }


def encode_boosting(plan: Mapping[int, Mapping[str, TreeSettings]]) -> bytes:
    """A round's plan (client id → objective → settings) as the ``boost`` config entry."""
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
            self.base = baselines(**json.loads(cast(str, config["baseline-config"])))
            self.seed = int(cast(int, config["seed"]))
            self.run_id = str(config[_RUN_ID])
            self.round = int(cast(int, config[SERVER_ROUND]))
            raw_plan = cast(bytes, config.get(BOOST, b"{}"))
        except KeyError as exc:
            raise ProtocolError(f"fedxgb message lacks {exc}") from None
        record = content.array_records.get(ARRAYS, ArrayRecord())
        self.ensembles = ensembles_from_arrays(record, self.kinds)
        self.plan = {int(k): v for k, v in json.loads(raw_plan.decode()).items()}

    def boosting(self, client_id: int) -> dict[str, TreeSettings]:
        """The objectives client ``client_id`` boosts this round, with their settings."""
        depth = FedXgbOptions.of(self.base).fedxgb_depth
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
    local_trees = FedXgbOptions.of(instr.base).fedxgb_local_trees
    replies = client_round(client, instr.ensembles, boosting, margins, local_trees)
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
        values[_ROWS + s], values[LOSS + s] = int(rows), float(loss)
    return MetricRecord(values)


def reply_pairs(metrics: MetricRecord, objectives: Iterable[str]) -> dict[str, tuple[int, float]]:
    """A reply's ``(rows, loss)`` per objective it reports."""
    return {
        s: (int(cast(int, metrics[_ROWS + s])), float(cast(float, metrics[LOSS + s])))
        for s in objectives
        if _ROWS + s in metrics
    }


def booster_of(record: ArrayRecord, objective: str) -> xgb.Booster:
    """A reply's new trees of ``objective`` (uint8 XGBoost JSON) as a booster."""
    if objective not in record:
        raise ProtocolError(f"a reply reports {objective!r} without its trees")
    booster = xgb.Booster()
    booster.load_model(bytearray(_raw(record, objective)))
    return booster
