"""The client of a securely aggregated Stage 1 (Flower's legacy path with ``secaggplus_mod``).

A thin adapter: :func:`fedcare_core.stage1.loop.client_update` from the broadcast ``w^t``, as the
client the server's handshake assigned, then :mod:`fedcare_core.stage1.secure_sums` packs the update
into one pre-weighted vector, clips it to the round's range and rounds it onto SecAgg+'s grid.
Flower's ``secaggplus_mod`` (wrapped around the ``train`` messages) masks that vector before it
leaves the process and clears the plain arrays from the reply; only the masked integers and
``metrics={"client-id": k}`` reach the server. The handshake (``query``) and the final model
(``query.final_model``) are :mod:`fedcare.flower.client_app`'s, so a site joins a secure run
as it joins any other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path

import numpy as np
from flwr.app import Context
from flwr.client import Client, NumPyClient
from flwr.client.mod import secaggplus_mod
from flwr.clientapp import ClientApp

from fedcare.flower.audit import audited
from fedcare.flower.client_app import (
    cached_client,
    check_instruction_terms,
    handle_final_model,
    handle_query,
    node_config_data_path,
)
from fedcare.flower.secagg import (
    CLIENT_ID,
    UNIT_WEIGHT,
    SecAggProtocolError,
    decode_instruction,
)
from fedcare.flower.site_errors import guarded
from fedcare.flower.site_messages import FINAL_MODEL_ACTION
from fedcare_core.data.clients import ClientData
from fedcare_core.stage1.secure_sums import (
    SumLayout,
    add_site_noise,
    pack_update,
    seal,
    site_noise_rng,
    site_noise_std,
)

DataLocator = Callable[[Context], Path]


def _secure_fit(
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
        The round's :func:`~fedcare.flower.secagg.encode_instruction`.

    Returns
    -------
    tuple[list[numpy.ndarray], int, dict]
        A legacy ``fit`` reply: ``[vector]``, :data:`~fedcare.flower.secagg.UNIT_WEIGHT` and
        the client id.
    """
    import torch

    from fedcare_core.nn.models import MultiObjectiveModel
    from fedcare_core.stage1.loop import client_update

    ins = decode_instruction(config)
    if ins.client_id != client.client_id:
        client = replace(client, client_id=ins.client_id)  # a site's position in the run
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
    dp = ins.stage1.privacy()
    private = dp is not None
    layout = SumLayout(ins.objectives, params.size, buffers.size)
    vector = pack_update(update, buffers, layout, private=private)
    if dp is not None and ins.noise_sites > 0:  # the site's share: the server never sees less
        rng = site_noise_rng(ins.noise_seed, ins.server_round, client.client_id)
        vector = add_site_noise(vector, layout, site_noise_std(dp, ins.noise_sites), rng)
    sealed = seal(vector, ins.clip, ins.levels, private=private)
    return [sealed], UNIT_WEIGHT, {CLIENT_ID: int(client.client_id)}


class _SecureClient(NumPyClient):
    """A legacy client around :func:`_secure_fit` for one node's data."""

    def __init__(self, locate: DataLocator, context: Context) -> None:
        self._locate = locate
        self._context = context

    def fit(self, parameters: list[np.ndarray], config: dict) -> tuple[list[np.ndarray], int, dict]:
        """See :func:`_secure_fit` (after the site's policy accepted the round's terms)."""
        ins = decode_instruction(config)
        check_instruction_terms(self._context, ins.stage1, ins.objectives)
        return _secure_fit(cached_client(self._locate, self._context), parameters, config)


def build_secagg_client_app(locate: DataLocator) -> ClientApp:
    """A ClientApp whose data folder is found by ``locate(context)``.

    ``train`` messages (SecAgg+'s stages) go through ``secaggplus_mod`` to the legacy client;
    ``query`` (the handshake) and ``query.final_model`` to the plain client's handlers. Every
    reply is recorded in the site's audit log as it leaves: a stage's reply after the mod
    masked it, so the log and the coordinator's record digest the same message.
    """

    def client_fn(context: Context) -> Client:
        return _SecureClient(locate, context).to_client()

    legacy = ClientApp(client_fn=client_fn, mods=[secaggplus_mod])
    client_app = ClientApp()
    client_app.query()(audited(guarded(partial(handle_query, locate))))
    client_app.query(FINAL_MODEL_ACTION)(audited(guarded(handle_final_model)))
    # each SecAgg+ stage's reply, as it leaves (masked); a failure without local paths
    client_app.train()(audited(guarded(legacy)))
    return client_app


app = build_secagg_client_app(node_config_data_path)
