"""The client of a securely aggregated Stage 1 (Flower's legacy path with ``secaggplus_mod``).

A thin adapter: :func:`fedcare_core.stage1.client_update` from the broadcast ``w^t``, then
:mod:`fedcare_core.secure_sums` packs the update into one pre-weighted vector, clips it to the
round's range and rounds it onto SecAgg+'s grid. Flower's ``secaggplus_mod`` (wrapped around
this app) masks that vector before it leaves the process and clears the plain arrays from the
reply; only the masked integers and ``metrics={"client-id": k}`` reach the server.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
from flwr.app import Context
from flwr.client import Client, NumPyClient
from flwr.client.mod import secaggplus_mod
from flwr.clientapp import ClientApp

from fedcare_core.data.client_store import load_client_data
from fedcare_core.data.federation import ClientData
from fedcare_core.secure_sums import SumLayout, pack_update, seal
from fedcare_flower.client_app import node_config_data_path
from fedcare_flower.secagg import (
    CLIENT_ID,
    UNIT_WEIGHT,
    SecAggProtocolError,
    decode_instruction,
)

DataLocator = Callable[[Context], Path]

# A long-lived process (a Ray actor in simulation) serves many rounds: load each folder once.
_CACHE: dict[str, ClientData] = {}


def _load(path: Path) -> ClientData:
    # Absolute, links not followed: a memory file's /proc/<pid>/fd/<n> must be opened as given.
    key = str(path.absolute())
    if key not in _CACHE:
        _CACHE[key] = load_client_data(key)
    return _CACHE[key]


def secure_fit(
    client: ClientData, parameters: list[np.ndarray], config: dict
) -> tuple[list[np.ndarray], int, dict]:
    """One securely aggregated round of ``client``: its sealed vector, weight 1, its id.

    Parameters
    ----------
    client
        The client's data.
    parameters
        ``[w^t, β^t]`` (float32).
    config
        The round's :func:`~fedcare_flower.secagg.encode_instruction`.

    Returns
    -------
    tuple[list[numpy.ndarray], int, dict]
        A legacy ``fit`` reply: ``[vector]``, :data:`~fedcare_flower.secagg.UNIT_WEIGHT` and
        the client id.
    """
    import torch

    from fedcare_core.models import MultiObjectiveModel
    from fedcare_core.stage1 import client_update

    ins = decode_instruction(config)
    width = client.train.x_common.shape[1]
    if width != ins.common_width:
        raise SecAggProtocolError(
            f"client {client.client_id} encodes {width} common columns, "
            f"the server's model expects {ins.common_width}"
        )
    params = np.asarray(parameters[0], dtype=np.float32)
    buffers = np.asarray(parameters[1], dtype=np.float32)
    torch.use_deterministic_algorithms(True)
    model = MultiObjectiveModel(ins.common_width, ins.objectives, ins.model)
    update = client_update(
        model,
        params,
        buffers,
        client,
        ins.kinds,
        ins.stage1,
        seed=ins.seed,
        round_idx=ins.server_round,
    )
    private = ins.stage1.privacy() is not None
    layout = SumLayout(ins.objectives, params.size, buffers.size)
    vector = pack_update(update, buffers, layout, private=private)
    sealed = seal(vector, ins.clip, ins.levels, private=private)
    return [sealed], UNIT_WEIGHT, {CLIENT_ID: int(client.client_id)}


class _SecureClient(NumPyClient):
    """A legacy client around :func:`secure_fit` for one node's data."""

    def __init__(self, locate: DataLocator, context: Context) -> None:
        self._locate = locate
        self._context = context

    def fit(self, parameters: list[np.ndarray], config: dict) -> tuple[list[np.ndarray], int, dict]:
        """See :func:`secure_fit`."""
        return secure_fit(_load(self._locate(self._context)), parameters, config)


def build_secagg_client_app(locate: DataLocator) -> ClientApp:
    """A ClientApp (SecAgg+ mod on) whose data folder is found by ``locate(context)``."""

    def client_fn(context: Context) -> Client:
        return _SecureClient(locate, context).to_client()

    return ClientApp(client_fn=client_fn, mods=[secaggplus_mod])


app = build_secagg_client_app(node_config_data_path)
