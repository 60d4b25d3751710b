"""The clients' union view over Flower: the union layout sent, each client's vectors built.

The server sends the union layout (column names, no rows) in a round's config: FMGDA/FSMGDA
(Algorithm 1 on the union view, :mod:`fedcare.flower.strategy`) and FedAvg's family
(:mod:`fedcare.flower.fedavg`). A client embeds its own encoded features
(:func:`~fedcare_core.algorithms.union.features.union_client`), the same function the
in-process runner applies.
"""

from __future__ import annotations

import json

from fedcare.flower.messages import (
    ProtocolError,
)
from fedcare.flower.run_plan import RunPlan
from fedcare_core.algorithms.union.features import UnionLayout
from fedcare_core.data.clients import ClientData


def encode_union_layout(layout: UnionLayout) -> bytes:
    """The union layout as UTF-8 JSON bytes (Flower logs a config's bytes as ``<bytes>``).

    Column names hold a NUL separator, which JSON escapes.
    """
    doc = {"common_width": layout.common_width, "columns": list(layout.columns)}
    return json.dumps(doc).encode()


def _decode_union_layout(raw: bytes) -> UnionLayout:
    """Inverse of :func:`encode_union_layout`."""
    doc = json.loads(raw.decode())
    return UnionLayout(int(doc["common_width"]), tuple(str(c) for c in doc["columns"]))


def plan_union_layout(plan: RunPlan) -> UnionLayout:
    """The union layout a baseline plan carries."""
    if plan.union_common_width is None:
        raise ProtocolError("the run plan has no union layout")
    return UnionLayout(plan.union_common_width, plan.union_columns)


# (client folder, layout JSON) → union view; a Ray actor serves many rounds.
_UNION_CACHE: dict[tuple[str, bytes], ClientData] = {}


def union_view(client: ClientData, cache_key: str, layout: bytes) -> ClientData:
    """The client's union view for the encoded ``layout`` (cached per process).

    Raises
    ------
    ProtocolError
        If the client's common block does not have the layout's width.
    """
    from fedcare_core.algorithms.union.features import union_client

    key = (cache_key, layout)
    if key not in _UNION_CACHE:
        union = _decode_union_layout(layout)
        if client.common_encoder.width != union.common_width:
            raise ProtocolError(
                f"client {client.client_id} encodes {client.common_encoder.width} common "
                f"columns, the server's union layout has {union.common_width}"
            )
        for stale in [k for k in _UNION_CACHE if k[0] == cache_key]:
            del _UNION_CACHE[stale]  # another run's layout for the same folder
        _UNION_CACHE[key] = union_client(client, union)
    return _UNION_CACHE[key]
