"""Output locations checked before any work: a run must not train for hours to fail on a write.

Each check probes by creating and removing a temporary file in the folder the output will
land in (or, for a folder not made yet, in its nearest existing ancestor, where it would be
created), so nothing half-written is left behind and no folder is created early.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from fedcare_core.errors import ConfigError


def _probe(folder: Path, what: str, target: Path) -> None:
    """Create and remove a temporary file in ``folder``; refuse ``target`` if that fails."""
    try:
        fd, name = tempfile.mkstemp(prefix=".fedcare-probe-", dir=folder)
    except OSError as exc:
        raise ConfigError(
            f"{what} {target}: cannot write in {folder}: {exc.strerror or exc}"
        ) from None
    os.close(fd)
    os.unlink(name)


def _existing_ancestor(path: Path, what: str, target: Path) -> Path:
    """The nearest existing ancestor of ``path`` (a folder, else refuse ``target``)."""
    ancestor = path
    while not ancestor.exists():
        if ancestor.parent == ancestor:
            break
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise ConfigError(f"{what} {target}: {ancestor} is not a folder")
    return ancestor


def check_output_file(path: str | Path, what: str = "--out") -> Path:
    """Check that a file can be written at ``path`` (its folder made if missing); return it.

    Raises
    ------
    ConfigError
        ``path`` is a folder, or its folder cannot be created or written in.
    """
    target = Path(path)
    if target.is_dir():
        raise ConfigError(f"{what} {target} is a folder; give a file path")
    if target.exists() and not os.access(target, os.W_OK):
        raise ConfigError(f"{what} {target}: the file is not writable")
    _probe(_existing_ancestor(target.parent, what, target), what, target)
    return target


def check_output_dir(path: str | Path, what: str = "--out") -> Path:
    """Check that files can be written in folder ``path`` (made if missing); return it.

    Raises
    ------
    ConfigError
        ``path`` is a file, or it cannot be created or written in.
    """
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise ConfigError(f"{what} {target} is a file; give a folder")
    _probe(_existing_ancestor(target, what, target), what, target)
    return target
