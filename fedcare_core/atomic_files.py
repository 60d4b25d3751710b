"""Files replaced atomically and durably: a reader sees the old contents or the new, never half.

Kept apart from :mod:`fedcare_core.checkpoint` (which uses it for every checkpoint) so that a
command that only writes a file (``fedcare predict``'s scores) imports no training code.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


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
