"""FedCARE's Stage 1 wire format: the core's dataclasses as Flower records (pure functions).

Message layout
--------------
Every message's content is a :class:`~flwr.app.RecordDict`. Keys are fixed strings; per-objective
entries are suffixed with ``.<objective>`` and appear for **every** objective of the federation,
in the model's head order, so that all replies of a round carry the same keys (Flower's reply
checks, ``validate_message_reply_consistency``, require exactly one ArrayRecord and one
MetricRecord per reply, identical keys across replies, and a scalar ``num-examples``).

Handshake, server → client (message type ``query``)
    ``"config"`` ConfigRecord: ``protocol`` (int, :data:`PROTOCOL_VERSION`).
Handshake reply
    ``"metrics"`` MetricRecord: ``client-id`` (int), ``protocol`` (int). No row count: the
    server does not need one, and under differential privacy nothing data-dependent but the
    clipped update may leave a client.

Round t, server → client (message type ``train``)
    ``"arrays"`` ArrayRecord: ``params`` (float32, P: ``w^t`` flattened in
    ``model.parameters()`` order) and ``buffers`` (float32, B: BatchNorm running statistics).
    ``"config"`` ConfigRecord: ``server-round`` (int, t), ``seed`` (int), ``objectives``
    (list[str]), ``kinds`` (list[str], ``binary``/``regression``), ``common-width`` (int),
    ``model-config`` and ``stage1-config`` (str, JSON of the core's frozen dataclasses; the
    server's DP noise seed ``dp_noise_seed`` is always null there: it keys the server's noise,
    which a client able to regenerate could subtract), ``protocol`` (int), and for
    FMGDA/FSMGDA ``union-layout`` (bytes, UTF-8 JSON: the baselines' union feature layout,
    column names only; the client trains on its union vectors).
Round t reply
    ``"arrays"`` ArrayRecord: ``delta.<s>`` (float32, P: the accumulated gradient Δ_{k,s} of
    eq. 7; shape ``(0,)`` when the client does not pursue ``s``: an objective is pursued
    exactly when its delta is not empty) and ``buffers`` (float32, B: the BatchNorm running
    statistics; under DP their change, clipped with the deltas).
    ``"metrics"`` MetricRecord: ``num-examples`` (int, N_k), ``client-id`` (int),
    ``num-examples.<s>`` (int, N_{k,s}, the aggregation weight of eq. 8; 0 when not pursued),
    ``loss.<s>`` (float, mean local training loss; 0.0 when not pursued). Under differential
    privacy (``Stage1Config.privacy()``) every count is 0 and every pursued objective's loss
    NaN: the client discloses nothing but its clipped vectors.

Server aggregate of round t (what :meth:`FedCareStrategy.aggregate_train` returns)
    ArrayRecord ``params`` / ``buffers`` = ``w^{t+1}``; MetricRecord ``lambda.<s>`` (λ*_s, 0.0
    for objectives without an update this round), ``d-sq-norm`` (‖d^t‖²), ``participants``
    (int), ``missing-objectives`` (int), and under differential privacy ``epsilon`` (ε spent
    after the round).

All arrays travel as ``.npy`` bytes without pickle, so values arrive bit-exact: the server
computes on exactly the floats the in-process runner would.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import cast

import numpy as np
from flwr.app import (
    Array,
    ArrayRecord,
    ConfigRecord,
    MetricRecord,
    MetricRecordValues,
    RecordDict,
)

from fedcare_core.config import ModelConfig, Stage1Config
from fedcare_core.stage1.loop import ClientUpdate, ObjectiveUpdate, RoundInfo

#: Bumped when the layout above changes; both sides check it. 3: no row count in the
#: handshake, a pursued objective known by its non-empty delta (counts are 0 under DP).
PROTOCOL_VERSION = 3
ARRAYS = "arrays"
CONFIG = "config"
METRICS = "metrics"
_PARAMS = "params"
_BUFFERS = "buffers"
NUM_EXAMPLES = "num-examples"  # Flower's default weighting key
CLIENT_ID = "client-id"
PROTOCOL = "protocol"
SERVER_ROUND = "server-round"
_DELTA_PREFIX = "delta."
COUNT_PREFIX = "num-examples."
LOSS_PREFIX = "loss."
_LAMBDA_PREFIX = "lambda."
_D_SQ_NORM = "d-sq-norm"
EPSILON = "epsilon"
UNION_LAYOUT = "union-layout"


class ProtocolError(ValueError):
    """A message does not follow the layout above."""


@dataclass(frozen=True)
class _TrainInstruction:
    """Everything a client needs for one round, decoded from a ``train`` message."""

    server_round: int
    seed: int
    objectives: tuple[str, ...]
    kinds: dict[str, str]
    common_width: int
    model: ModelConfig
    stage1: Stage1Config
    params: np.ndarray
    buffers: np.ndarray
    union_layout: bytes | None = None


def _array(a: np.ndarray) -> Array:
    return Array(np.ascontiguousarray(a))


def _vector(record: ArrayRecord, key: str, dtype: type = np.float32) -> np.ndarray:
    if key not in record:
        raise ProtocolError(f"array {key!r} missing from message")
    out = record[key].numpy()
    if out.ndim != 1 or out.dtype != dtype:
        raise ProtocolError(f"array {key!r} must be a 1-d {dtype.__name__}, got {out.dtype}")
    return out


def _check_protocol(value: object) -> None:
    if value != PROTOCOL_VERSION:
        raise ProtocolError(f"protocol version {value!r}, expected {PROTOCOL_VERSION}")


def model_arrays(params: np.ndarray, buffers: np.ndarray) -> ArrayRecord:
    """The global model ``w`` as an ArrayRecord (``params`` and ``buffers``)."""
    return ArrayRecord(
        {_PARAMS: _array(params.astype(np.float32)), _BUFFERS: _array(buffers.astype(np.float32))}
    )


def model_from_arrays(record: ArrayRecord) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of :func:`model_arrays`."""
    return _vector(record, _PARAMS), _vector(record, _BUFFERS)


def final_arrays(params: np.ndarray, buffers: np.ndarray) -> ArrayRecord:
    """A Stage 1 result as an ArrayRecord: a network's float32 ``w*``, or fedxgb's trees.

    Trees travel as their uint8 bytes (:func:`fedcare_core.algorithms.fedxgb.bundle.pack_trees`),
    which a cast to float32 would destroy.
    """
    if params.dtype == np.uint8:
        return ArrayRecord({_PARAMS: _array(params), _BUFFERS: _array(buffers.astype(np.float32))})
    return model_arrays(params, buffers)


def final_from_arrays(record: ArrayRecord) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of :func:`final_arrays`."""
    if _PARAMS in record and record[_PARAMS].numpy().dtype == np.uint8:
        return _vector(record, _PARAMS, np.uint8), _vector(record, _BUFFERS)
    return model_from_arrays(record)


def encode_query() -> RecordDict:
    """Content of the handshake message."""
    return RecordDict({CONFIG: ConfigRecord({PROTOCOL: PROTOCOL_VERSION})})


def encode_identity(client_id: int) -> RecordDict:
    """Content of a client's handshake reply: which client it is, and nothing about its data."""
    return RecordDict(
        {METRICS: MetricRecord({CLIENT_ID: int(client_id), PROTOCOL: PROTOCOL_VERSION})}
    )


def decode_identity(content: RecordDict) -> int:
    """The client id a handshake reply claims."""
    try:
        metrics = content.metric_records[METRICS]
        _check_protocol(metrics[PROTOCOL])
        return int(cast(int, metrics[CLIENT_ID]))
    except KeyError as exc:
        raise ProtocolError(f"handshake reply lacks {exc}") from None


def encode_train_instruction(
    *,
    server_round: int,
    seed: int,
    objectives: Sequence[tuple[str, str]],
    common_width: int,
    model: ModelConfig,
    stage1: Stage1Config,
    arrays: ArrayRecord,
    union_layout: bytes | None = None,
) -> RecordDict:
    """Content of the ``train`` message of round ``server_round``.

    ``stage1`` travels without its ``dp_noise_seed`` (a client clips, it never draws noise).
    """
    config = ConfigRecord(
        {
            PROTOCOL: PROTOCOL_VERSION,
            SERVER_ROUND: int(server_round),
            "seed": int(seed),
            "objectives": [n for n, _ in objectives],
            "kinds": [k for _, k in objectives],
            "common-width": int(common_width),
            "model-config": json.dumps(asdict(model)),
            "stage1-config": json.dumps(asdict(replace(stage1, dp_noise_seed=None))),
        }
    )
    if union_layout is not None:
        config[UNION_LAYOUT] = union_layout
    return RecordDict({ARRAYS: arrays, CONFIG: config})


def decode_train_instruction(content: RecordDict) -> _TrainInstruction:
    """Inverse of :func:`encode_train_instruction`."""
    try:
        config = content.config_records[CONFIG]
        _check_protocol(config[PROTOCOL])
        names = tuple(cast(list[str], config["objectives"]))
        kinds = cast(list[str], config["kinds"])
        model_raw = json.loads(cast(str, config["model-config"]))
        model_raw["head_hidden"] = tuple(model_raw["head_hidden"])
        params, buffers = model_from_arrays(content.array_records[ARRAYS])
        return _TrainInstruction(
            server_round=int(cast(int, config[SERVER_ROUND])),
            seed=int(cast(int, config["seed"])),
            objectives=names,
            kinds=dict(zip(names, kinds, strict=True)),
            common_width=int(cast(int, config["common-width"])),
            model=ModelConfig(**model_raw),
            stage1=Stage1Config(**json.loads(cast(str, config["stage1-config"]))),
            params=params,
            buffers=buffers,
            union_layout=cast(bytes, config[UNION_LAYOUT]) if UNION_LAYOUT in config else None,
        )
    except KeyError as exc:
        raise ProtocolError(f"train message lacks {exc}") from None


def encode_client_update(update: ClientUpdate, objectives: Sequence[str]) -> RecordDict:
    """Content of a client's ``train`` reply.

    Parameters
    ----------
    update
        The core's :class:`ClientUpdate`.
    objectives
        Every objective of the federation (from the instruction), so that all replies carry
        the same keys.

    Returns
    -------
    RecordDict
        One ArrayRecord (``arrays``) and one MetricRecord (``metrics``).
    """
    unknown = set(update.objectives) - set(objectives)
    if unknown:
        raise ProtocolError(f"client update has objectives outside the federation: {unknown}")
    empty = np.zeros(0, dtype=np.float32)
    arrays: dict[str, Array] = {}
    metrics: dict[str, MetricRecordValues] = {
        NUM_EXAMPLES: int(update.num_examples),
        CLIENT_ID: int(update.client_id),
    }
    for s in objectives:
        obj = update.objectives.get(s)
        arrays[_DELTA_PREFIX + s] = _array(empty if obj is None else obj.delta.astype(np.float32))
        metrics[COUNT_PREFIX + s] = 0 if obj is None else int(obj.num_examples)
        metrics[LOSS_PREFIX + s] = 0.0 if obj is None else float(obj.loss)
    arrays[_BUFFERS] = _array(update.buffers.astype(np.float32))
    return RecordDict({ARRAYS: ArrayRecord(arrays), METRICS: MetricRecord(metrics)})


def decode_client_update(content: RecordDict, objectives: Sequence[str]) -> ClientUpdate:
    """Inverse of :func:`encode_client_update`.

    An objective whose ``delta.<s>`` is empty is one the client does not pursue and is left
    out of :attr:`ClientUpdate.objectives`. A pursued one keeps its count and loss as sent
    (0 and NaN under differential privacy).
    """
    if len(content.array_records) != 1 or len(content.metric_records) != 1:
        raise ProtocolError("a train reply holds exactly one ArrayRecord and one MetricRecord")
    try:
        arrays = content.array_records[ARRAYS]
        metrics = content.metric_records[METRICS]
        updates: dict[str, ObjectiveUpdate] = {}
        for s in objectives:
            delta = _vector(arrays, _DELTA_PREFIX + s)
            n = int(cast(int, metrics[COUNT_PREFIX + s]))
            if delta.size > 0:
                updates[s] = ObjectiveUpdate(
                    delta=delta,
                    num_examples=n,
                    loss=float(cast(float, metrics[LOSS_PREFIX + s])),
                )
            elif n != 0:
                raise ProtocolError(f"objective {s!r} has {n} examples but no delta")
        return ClientUpdate(
            client_id=int(cast(int, metrics[CLIENT_ID])),
            objectives=updates,
            buffers=_vector(arrays, _BUFFERS),
            num_examples=int(cast(int, metrics[NUM_EXAMPLES])),
        )
    except KeyError as exc:
        raise ProtocolError(f"train reply lacks {exc}") from None


def round_metrics(info: RoundInfo, objectives: Sequence[str]) -> MetricRecord:
    """The server's per-round summary: λ*_s for every objective, ‖d‖², participation, ε."""
    out: dict[str, MetricRecordValues] = {
        _LAMBDA_PREFIX + s: float(info.lambdas.get(s, 0.0)) for s in objectives
    }
    out[_D_SQ_NORM] = float(info.d_sq_norm)
    out["participants"] = len(info.participants)
    out["missing-objectives"] = len(info.missing_objectives)
    if info.epsilon is not None:
        out[EPSILON] = float(info.epsilon)
    return MetricRecord(out)
