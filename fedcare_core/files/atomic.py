"""Files replaced atomically and durably: a reader sees the old contents or the new, never half.

Kept apart from :mod:`fedcare_core.resume.checkpoint` (which uses it for every checkpoint) so that a
command that only writes a file (``fedcare predict``'s scores) imports no training code.
:func:`write_json_atomic` is the one writer of FedCARE's JSON documents (results, run folders,
schemas, Stage 1 documents).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically and durably; the file is owner-only (0600).

    Parameters
    ----------
    path
        The file to write; its folder must exist.
    data
        The new contents.
    """
    path = Path(path)
    # mkstemp creates the file with mode 0600, which os.replace keeps.
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_folder(path.parent)


def _fsync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable (a no-op where folders cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory file descriptors
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_json_atomic(path: str | Path, document: Mapping[str, Any]) -> None:
    """Write ``document`` as :func:`_document_json` atomically (owner-only), its folder made.

    Parameters
    ----------
    path
        The file; missing parent folders are created.
    document
        A JSON-like mapping.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, _document_json(document).encode())


def _document_json(document: Mapping[str, Any]) -> str:
    """A results document as JSON text (NaN and infinities as ``null``, numpy scalars as numbers).

    Parameters
    ----------
    document
        :meth:`ExperimentResult.to_dict` (or any JSON-like mapping).

    Returns
    -------
    str
        Indented JSON, ending in a newline.
    """
    text = json.dumps(_finite(document), indent=2, allow_nan=False, default=_json_default)
    return text + "\n"


def _json_default(obj: object) -> Any:
    import numpy as np

    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, tuple):
        return list(obj)
    raise TypeError(f"not JSON-serialisable: {type(obj).__name__}")


def _finite(obj: Any) -> Any:
    """Replace NaN/inf floats by None (JSON has no NaN)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, Mapping):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    return obj
