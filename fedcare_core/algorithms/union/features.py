"""The baselines' union feature vector (SPEC §2, "FullMLP").

Every client's encoded features — the common block, then its private features — are placed into
one union-sized vector, with zeros where the client lacks a feature, so one network shape serves
all clients. The union layout is built from the clients' fitted encoders (column layouts, never
rows): numeric features take two slots (value, missing indicator); a categorical feature takes
the union of the clients' vocabularies (its declared vocabulary, or the merged per-client
top values of an undeclared one) plus ``other`` and ``missing``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from fedcare_core.data.clients import ClientData, Federation, SplitArrays
from fedcare_core.data.preprocess import FeatureEncoder

#: Suffix columns a categorical feature always has after its vocabulary.
_CATEGORICAL_EXTRAS = ("__other__", "__missing__")


@dataclass(frozen=True)
class UnionLayout:
    """Where every encoded column lies in the union vector.

    Parameters
    ----------
    common_width
        Width of the common block (the first columns, identical at every client).
    columns
        Names of the union's private columns, in order (after the common block).
    """

    common_width: int
    columns: tuple[str, ...]

    @property
    def width(self) -> int:
        """Total width of the union vector."""
        return self.common_width + len(self.columns)

    def private_index(self, encoder: FeatureEncoder) -> np.ndarray:
        """Union positions of ``encoder``'s columns (a client's private block)."""
        pos = {name: self.common_width + i for i, name in enumerate(self.columns)}
        return np.array([pos[c] for c in _column_keys(encoder)], dtype=np.int64)

    def embed(self, split: SplitArrays, encoder: FeatureEncoder) -> np.ndarray:
        """The union vectors of a client's split, float32 ``(n, width)``."""
        out = np.zeros((split.n, self.width), dtype=np.float32)
        out[:, : self.common_width] = split.x_common
        out[:, self.private_index(encoder)] = split.x_private
        return out


def _column_keys(encoder: FeatureEncoder) -> list[str]:
    # Column names with a separator that cannot occur in a feature name, so that a value
    # containing "=" cannot collide with another feature's column.
    keys = [f"{c}\x00num" for c in encoder.numeric] + [f"{c}\x00nan" for c in encoder.numeric]
    for col, vocab in encoder.categorical:
        keys.extend(f"{col}\x00={v}" for v in (*vocab, *_CATEGORICAL_EXTRAS))
    return keys


def union_layout(federation: Federation) -> UnionLayout:
    """Build the union layout of a federation's clients.

    Private features are ordered as in the feature partition (``partition.all_features``),
    then the features a site declared for itself, in client order; within a feature, numeric
    slots are ``[value, missing]`` and categorical slots are the union of the clients'
    vocabularies in first-seen order over clients 0..K−1 (a declared vocabulary is the same at
    every client and keeps its order), then ``other`` and ``missing``.

    Parameters
    ----------
    federation
        The clients.

    Returns
    -------
    UnionLayout
        The layout.
    """
    numeric: set[str] = set()
    vocabs: dict[str, list[str]] = {}
    for c in federation.clients:
        numeric.update(c.private_encoder.numeric)
        for col, vocab in c.private_encoder.categorical:
            known = vocabs.setdefault(col, [])
            known.extend(v for v in vocab if v not in known)
    # The partition's features, then those a site declared for itself (its own private
    # columns, in no pool of the partition), in client order: padded with zeros elsewhere.
    order = list(federation.partition.all_features)
    for c in federation.clients:
        order.extend(f for f in c.private_features if f not in order)
    columns: list[str] = []
    for f in order:
        if f in numeric:
            columns.extend([f"{f}\x00num", f"{f}\x00nan"])
        elif f in vocabs:
            columns.extend(f"{f}\x00={v}" for v in (*vocabs[f], *_CATEGORICAL_EXTRAS))
    # Numeric value and missing columns are interleaved per feature here but stored as blocks by
    # the encoder; private_index maps by name, so the order within a client does not matter.
    return UnionLayout(common_width=federation.common_width, columns=tuple(columns))


def union_client(client: ClientData, layout: UnionLayout) -> ClientData:
    """The client with ``x_common`` replaced by its union vectors and no private block.

    Everything that trains on ``x_common`` (Algorithm 1's client step, the evaluation scorers)
    then runs unchanged on the FullMLP input. Each split keeps its labels, patient ordinals and
    subgroups.
    """

    def view(split: SplitArrays) -> SplitArrays:
        return replace(
            split,
            x_common=layout.embed(split, client.private_encoder),
            x_private=np.zeros((split.n, 0), dtype=np.float32),
        )

    return replace(client, train=view(client.train), val=view(client.val), test=view(client.test))


def union_federation(federation: Federation) -> tuple[Federation, UnionLayout]:
    """The federation seen through the union layout (``common_width`` = union width).

    Parameters
    ----------
    federation
        The clients.

    Returns
    -------
    tuple[Federation, UnionLayout]
        The union view and its layout.
    """
    layout = union_layout(federation)
    clients = tuple(union_client(c, layout) for c in federation.clients)
    return replace(federation, clients=clients, common_width=layout.width), layout
