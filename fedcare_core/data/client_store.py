"""One client's data on disk: what a federated client process (a Flower SuperNode) reads.

:func:`save_client_data` materialises a single :class:`ClientData` as a folder holding
``arrays.npz`` (every numeric array: encoded splits and the encoders' training statistics) and
``client.json`` (identifiers, feature names, vocabularies, a format version and the arrays'
checksum). :func:`client_data_bytes` packs the same content into one ``.npz`` image (the
metadata as one more member, each member guarded by the zip's CRC-32) for a handover that never
touches a disk, e.g. an anonymous ``memfd_create`` file. :func:`load_client_data` reads either
back exactly. No pickle is written or accepted, so loading cannot execute code, and each
client's folder or image holds that client's rows only.

A split's patient ordinals (``{split}.groups``, int64) and sensitive subgroups
(``{split}.subgroup.{name}``, unicode arrays, their names listed in the metadata) are stored
where the split has them; a file written without them reads back without them (the layout only
adds members, so the format version stays).

The folder and its files are created owner-only from the start (0700 and 0600: the files are
opened with that mode, not changed afterwards), because they are patient-level data.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from fedcare_core.config.preferences import Preference
from fedcare_core.data.clients import SPLITS, ClientData, SplitArrays
from fedcare_core.data.preprocess import FeatureEncoder
from fedcare_core.errors import DataError

#: Bumped whenever the on-disk layout changes; readers refuse other versions.
_FORMAT_VERSION = 1
ARRAYS_FILE = "arrays.npz"
META_FILE = "client.json"
_SPLIT_FIELDS = ("x_common", "x_private", "y")
_ENCODER_FIELDS = ("medians", "means", "stds")
#: A split's patient ordinals, and the prefix of its subgroups' members.
_GROUPS = "groups"
_SUBGROUP = "subgroup"
#: The member of a one-file image (:func:`client_data_bytes`) holding ``client.json``'s content.
_META_MEMBER = "__meta__"
#: Owner-only modes of a client's folder and files.
FOLDER_MODE = 0o700
FILE_MODE = 0o600


def _encoder_meta(enc: FeatureEncoder) -> dict[str, Any]:
    return {
        "numeric": list(enc.numeric),
        "categorical": [[col, list(vocab)] for col, vocab in enc.categorical],
    }


def _arrays(client: ClientData) -> dict[str, np.ndarray]:
    arrays: dict[str, np.ndarray] = {}
    for split in SPLITS:
        data = client.split(split)
        for name in _SPLIT_FIELDS:
            arrays[f"{split}.{name}"] = np.ascontiguousarray(getattr(data, name))
        if data.groups is not None:
            arrays[f"{split}.{_GROUPS}"] = np.ascontiguousarray(data.groups, dtype=np.int64)
        for name, labels in data.subgroups.items():
            arrays[f"{split}.{_SUBGROUP}.{name}"] = np.ascontiguousarray(labels, dtype=str)
    for prefix, enc in (("common", client.common_encoder), ("private", client.private_encoder)):
        for name in _ENCODER_FIELDS:
            arrays[f"{prefix}.{name}"] = np.ascontiguousarray(getattr(enc, name))
    return arrays


def _meta(client: ClientData) -> dict[str, Any]:
    return {
        "format_version": _FORMAT_VERSION,
        "client_id": client.client_id,
        "objectives": list(client.objectives),
        "common_features": list(client.common_features),
        "private_features": list(client.private_features),
        "common_encoder": _encoder_meta(client.common_encoder),
        "private_encoder": _encoder_meta(client.private_encoder),
        "subgroups": {split: list(client.split(split).subgroups) for split in SPLITS},
        "preferences": {o: p.to_dict() for o, p in client.preferences.items()},
    }


def _write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file created with mode 0600."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, FILE_MODE)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def save_client_data(client: ClientData, path: str | Path) -> Path:
    """Write one client's data to the folder ``path`` (created 0700 if needed; files 0600).

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
    folder.parent.mkdir(parents=True, exist_ok=True, mode=FOLDER_MODE)
    folder.mkdir(exist_ok=True, mode=FOLDER_MODE)
    buf = io.BytesIO()
    np.savez(buf, allow_pickle=False, **_arrays(client))
    raw = buf.getvalue()
    _write_private(folder / ARRAYS_FILE, raw)
    meta = _meta(client) | {"arrays_sha256": hashlib.sha256(raw).hexdigest()}
    _write_private(folder / META_FILE, (json.dumps(meta, indent=1) + "\n").encode())
    return folder


def client_data_bytes(client: ClientData) -> bytes:
    """One client's data as a single ``.npz`` image (arrays plus a :data:`_META_MEMBER`).

    Parameters
    ----------
    client
        The client's encoded splits and fitted encoders.

    Returns
    -------
    bytes
        What :func:`load_client_data` reads back from a file holding it.
    """
    meta = np.frombuffer(json.dumps(_meta(client)).encode(), dtype=np.uint8)
    buf = io.BytesIO()
    np.savez(buf, allow_pickle=False, **{_META_MEMBER: meta}, **_arrays(client))
    return buf.getvalue()


def load_client_data(path: str | Path) -> ClientData:
    """Read a folder (:func:`save_client_data`) or a one-file image (:func:`client_data_bytes`).

    Parameters
    ----------
    path
        The client's folder, or a file with its one-file image (e.g. ``/proc/<pid>/fd/<n>``
        of an anonymous memory file).

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
    where = Path(path)
    if not where.is_dir():
        meta, arrays = _read_image(where)
        return _client_from(meta, arrays, str(where))
    meta_path, arrays_path = where / META_FILE, where / ARRAYS_FILE
    try:
        meta = json.loads(meta_path.read_text())
        raw = arrays_path.read_bytes()
    except (OSError, json.JSONDecodeError) as exc:
        raise DataError(f"cannot read client data: {exc}", file=str(where)) from None
    _check_version(meta, str(meta_path))
    if hashlib.sha256(raw).hexdigest() != meta.get("arrays_sha256"):
        raise DataError("client arrays do not match their checksum", file=str(arrays_path))
    return _client_from(meta, _npz_arrays(raw, str(arrays_path)), str(where))


def _npz_arrays(raw: bytes, where: str) -> dict[str, np.ndarray]:
    try:
        with np.load(io.BytesIO(raw), allow_pickle=False) as npz:
            return {k: npz[k] for k in npz.files}
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        raise DataError(f"malformed client data: {exc!r}", file=where) from None


def _read_image(path: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The metadata and arrays of a one-file image (:func:`client_data_bytes`)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read client data: {exc}", file=str(path)) from None
    arrays = _npz_arrays(raw, str(path))
    try:
        meta = json.loads(arrays.pop(_META_MEMBER).tobytes())
    except (KeyError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"malformed client data: {exc!r}", file=str(path)) from None
    _check_version(meta, str(path))
    return meta, arrays


def _check_version(meta: dict[str, Any], where: str) -> None:
    if meta.get("format_version") != _FORMAT_VERSION:
        raise DataError(
            f"client data format version {meta.get('format_version')!r} is not "
            f"{_FORMAT_VERSION}; re-create the file",
            file=where,
        )


def _client_from(meta: dict[str, Any], arrays: dict[str, np.ndarray], where: str) -> ClientData:
    try:
        splits = {split: _split_from(meta, arrays, split) for split in SPLITS}
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
            preferences={
                str(o): Preference.from_dict(p) for o, p in meta.get("preferences", {}).items()
            },
        )
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise DataError(f"malformed client data: {exc!r}", file=where) from None
    _check_shapes(client, where)
    return client


def _split_from(meta: dict[str, Any], arrays: dict[str, np.ndarray], split: str) -> SplitArrays:
    """One split's arrays (its groups and subgroups where stored)."""
    names = meta.get("subgroups", {}).get(split, [])
    x_common, x_private, y = (arrays[f"{split}.{name}"] for name in _SPLIT_FIELDS)
    return SplitArrays(
        x_common,
        x_private,
        y,
        groups=arrays.get(f"{split}.{_GROUPS}"),
        subgroups={str(n): arrays[f"{split}.{_SUBGROUP}.{n}"] for n in names},
    )


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
        if s.groups is not None and s.groups.dtype != np.int64:
            raise DataError(
                f"client data split {split!r} has patient ordinals of type {s.groups.dtype}",
                file=where,
            )
