"""The trees' rounds as one byte array: how a federated backend hands them back (fedxgb).

A federated backend returns a :class:`~fedcare_core.stage1.types.Stage1Result` (its result
folder keeps ``params`` and ``buffers``). For fedxgb its ``params`` are these bytes (uint8,
as Flower's XGBoost strategies carry a model): UTF-8 JSON with each objective's ensemble
(XGBoost JSON, round bounds included), the chosen rounds and the validation trace. The round
trace travels in ``rounds`` as every backend's does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import numpy as np

from fedcare_core.algorithms.fedxgb.rounds import TreeRounds
from fedcare_core.algorithms.fedxgb.trees import Ensemble
from fedcare_core.stage1.types import RoundInfo, Stage1Result

__all__ = ["pack_trees", "unpack_bytes", "unpack_trees"]


def pack_trees(trees: TreeRounds) -> np.ndarray:
    """``trees``' ensembles, chosen rounds and validation trace as uint8 bytes."""
    doc = {
        "ensembles": {s: json.loads(e.to_json()) for s, e in trees.ensembles.items()},
        "chosen": trees.chosen,
        "validation": [{s: _finite(v) for s, v in row.items()} for row in trees.validation],
    }
    return np.frombuffer(json.dumps(doc).encode(), dtype=np.uint8).copy()


def unpack_trees(stage1: Stage1Result, kinds: Mapping[str, str]) -> TreeRounds:
    """The :class:`TreeRounds` a backend's result carries (:func:`pack_trees`).

    Raises
    ------
    ValueError
        If the result's parameters are not a trees bundle (e.g. another algorithm's model).
    """
    return unpack_bytes(stage1.params, kinds, stage1.rounds)


def unpack_bytes(
    params: np.ndarray, kinds: Mapping[str, str], rounds: Sequence[RoundInfo] = ()
) -> TreeRounds:
    """:func:`unpack_trees` of the bytes alone (``rounds``: the round record, if known).

    Raises
    ------
    ValueError
        If ``params`` are not a trees bundle; KeyError for an objective ``kinds`` lacks.
    """
    if params.dtype != np.uint8:
        raise ValueError(f"not a trees bundle: parameters of dtype {params.dtype}")
    doc = json.loads(params.tobytes().decode())
    ensembles = {
        s: Ensemble.from_json(kinds[s], json.dumps(model).encode())
        for s, model in doc["ensembles"].items()
    }
    validation = [
        {s: float("nan") if v is None else float(v) for s, v in row.items()}
        for row in doc["validation"]
    ]
    chosen = {s: int(t) for s, t in doc["chosen"].items()}
    return TreeRounds(ensembles, list(rounds), chosen, validation)


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None
