"""One client's data on disk: what a federated client process (a Flower SuperNode) reads.

:func:`save_client_data` materialises a single :class:`ClientData` as a folder holding
``arrays.npz`` (every numeric array: encoded splits and the encoders' training statistics) and
``client.json`` (identifiers, feature names, vocabularies, a format version and the arrays'
checksum). :func:`load_client_data` reads it back exactly. No pickle is written or accepted, so
loading a file cannot execute code, and each client's folder holds that client's rows only.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from fedcare_core.data.federation import SPLITS, ClientData, SplitArrays
from fedcare_core.data.preprocess import FeatureEncoder
from fedcare_core.errors import DataError

#: Bumped whenever the on-disk layout changes; readers refuse other versions.
FORMAT_VERSION = 1
ARRAYS_FILE = "arrays.npz"
META_FILE = "client.json"
_SPLIT_FIELDS = ("x_common", "x_private", "y")
_ENCODER_FIELDS = ("medians", "means", "stds")


def _encoder_meta(enc: FeatureEncoder) -> dict[str, Any]:
    return {
        "numeric": list(enc.numeric),
        "categorical": [[col, list(vocab)] for col, vocab in enc.categorical],
    }


def save_client_data(client: ClientData, path: str | Path) -> Path:
    """Write one client's data to the folder ``path`` (created if needed).

    Parameters
    ----------
    client
        The client's encoded splits and fitted encoders.
    path
        Destination folder; existing files of the same names are replaced.

    Returns
    -------
    Path
        The folder written.
    """
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, np.ndarray] = {}
    for split in SPLITS:
        data = client.split(split)
        for name in _SPLIT_FIELDS:
            arrays[f"{split}.{name}"] = np.ascontiguousarray(getattr(data, name))
    for prefix, enc in (("common", client.common_encoder), ("private", client.private_encoder)):
        for name in _ENCODER_FIELDS:
            arrays[f"{prefix}.{name}"] = np.ascontiguousarray(getattr(enc, name))
    arrays_path = folder / ARRAYS_FILE
    tmp = folder / f".{ARRAYS_FILE}.tmp"
    with open(tmp, "wb") as fh:
        np.savez(fh, allow_pickle=False, **arrays)
    os.replace(tmp, arrays_path)
    meta = {
        "format_version": FORMAT_VERSION,
        "client_id": client.client_id,
        "objectives": list(client.objectives),
        "common_features": list(client.common_features),
        "private_features": list(client.private_features),
        "common_encoder": _encoder_meta(client.common_encoder),
        "private_encoder": _encoder_meta(client.private_encoder),
        "arrays_sha256": hashlib.sha256(arrays_path.read_bytes()).hexdigest(),
    }
    (folder / META_FILE).write_text(json.dumps(meta, indent=1) + "\n")
    return folder


def load_client_data(path: str | Path) -> ClientData:
    """Read a folder written by :func:`save_client_data`.

    Parameters
    ----------
    path
        The client's folder.

    Returns
    -------
    ClientData
        The client exactly as saved (same dtypes and values).

    Raises
    ------
    DataError
        If a file is missing, truncated, modified since it was written, of another format
        version, or inconsistent (array shapes that do not fit together).
    """
    folder = Path(path)
    meta_path, arrays_path = folder / META_FILE, folder / ARRAYS_FILE
    try:
        meta = json.loads(meta_path.read_text())
        raw = arrays_path.read_bytes()
    except (OSError, json.JSONDecodeError) as exc:
        raise DataError(f"cannot read client data: {exc}", file=str(folder)) from None
    if meta.get("format_version") != FORMAT_VERSION:
        raise DataError(
            f"client data format version {meta.get('format_version')!r} is not "
            f"{FORMAT_VERSION}; re-create the file",
            file=str(meta_path),
        )
    if hashlib.sha256(raw).hexdigest() != meta.get("arrays_sha256"):
        raise DataError("client arrays do not match their checksum", file=str(arrays_path))
    try:
        with np.load(arrays_path, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
        splits = {
            split: SplitArrays(*(arrays[f"{split}.{name}"] for name in _SPLIT_FIELDS))
            for split in SPLITS
        }
        encoders = {
            prefix: FeatureEncoder(
                numeric=tuple(meta[f"{prefix}_encoder"]["numeric"]),
                medians=arrays[f"{prefix}.medians"],
                means=arrays[f"{prefix}.means"],
                stds=arrays[f"{prefix}.stds"],
                categorical=tuple(
                    (str(col), tuple(str(v) for v in vocab))
                    for col, vocab in meta[f"{prefix}_encoder"]["categorical"]
                ),
            )
            for prefix in ("common", "private")
        }
        client = ClientData(
            client_id=int(meta["client_id"]),
            objectives=tuple(meta["objectives"]),
            common_features=tuple(meta["common_features"]),
            private_features=tuple(meta["private_features"]),
            common_encoder=encoders["common"],
            private_encoder=encoders["private"],
            train=splits["train"],
            val=splits["val"],
            test=splits["test"],
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise DataError(f"malformed client data: {exc!r}", file=str(folder)) from None
    _check_shapes(client, str(folder))
    return client


def _check_shapes(client: ClientData, where: str) -> None:
    m = len(client.objectives)
    for split in SPLITS:
        s = client.split(split)
        n = s.y.shape[0]
        ok = (
            s.y.ndim == 2
            and s.y.shape[1] == m
            and s.x_common.shape == (n, client.common_encoder.width)
            and s.x_private.shape == (n, client.private_encoder.width)
        )
        if not ok:
            raise DataError(
                f"client data split {split!r} has inconsistent shapes: x_common "
                f"{s.x_common.shape}, x_private {s.x_private.shape}, y {s.y.shape}",
                file=where,
            )
