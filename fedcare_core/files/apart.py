"""Outputs never replace inputs: one check every command that reads and writes files calls.

A command names its inputs and outputs by the options that give them (``--data``, ``--out``,
``--run-dir`` …); :func:`check_outputs_apart` refuses, before any work and with one line naming
both options, an output that is one of the inputs however it is spelt (``./x`` and ``x``, an
absolute path, a symbolic link, a hard link: two existing paths are compared by device and
inode, :func:`os.path.samefile`'s test; others by their resolved paths), an output folder the
command fills (a new or empty one: a site folder, a run folder, a split's folder) that holds an
input or another output, and an output file that already exists inside a folder read whole (a
data folder of raw tables, a model folder), or under an entry the command reads of a folder it
reads in part (a site folder's ``site.json``, ``data/`` or ``stage1/``; a coordinator's
``sites.json`` or ``keys/``): writing it would replace a file the command reads. An output
beside an input, under another name, is fine, and so is a result the command wrote there
before (``site personalise --out SITE/result.json`` run again).
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path

from fedcare_core.errors import ConfigError

__all__ = ["PathLike", "check_outputs_apart", "lies_within", "same_place"]

#: A path as a command holds it (None: the option was not given).
PathLike = str | os.PathLike[str] | None


def _identity(path: Path) -> tuple[int, int] | None:
    """``(st_dev, st_ino)`` of what ``path`` names (links followed), or None if it is absent."""
    try:
        status = os.stat(path)
    except (OSError, ValueError):  # absent, unreadable, or a NUL in the name
        return None
    return status.st_dev, status.st_ino


def _resolved(path: Path) -> Path:
    """``path`` made absolute with every symbolic link that exists followed."""
    try:
        return Path(os.path.abspath(path.expanduser())).resolve(strict=False)
    except (OSError, RuntimeError, ValueError):  # a link loop: compared as written
        return Path(os.path.abspath(path))


def same_place(first: Path, second: Path) -> bool:
    """Whether two paths name one file or folder.

    Parameters
    ----------
    first, second
        Paths as given (relative, absolute, through links).

    Returns
    -------
    bool
        Both exist and are the same inode on the same device (a hard link, a symbolic link,
        another spelling), or they resolve to the same path.
    """
    ids = _identity(first), _identity(second)
    if ids[0] is not None and ids[1] is not None:
        return ids[0] == ids[1]
    return _resolved(first) == _resolved(second)


def lies_within(path: Path, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or lies anywhere under it (links followed).

    Parameters
    ----------
    path
        A file or folder, existing or not.
    folder
        A folder, existing or not.
    """
    resolved = _resolved(path)
    return any(same_place(ancestor, folder) for ancestor in (resolved, *resolved.parents))


def _how(output: Path, given: Path) -> str:
    """How two paths that name one file differ, for the message."""
    if os.path.abspath(output) == os.path.abspath(given):
        return ""
    if _resolved(output) == _resolved(given):
        return " (the same file by another path or a symbolic link)"
    return " (a hard link to the same file)"


def _given(paths: Mapping[str, PathLike]) -> Iterator[tuple[str, Path]]:
    for option, path in paths.items():
        if path is not None and str(path) != "":
            yield option, Path(path)


def check_outputs_apart(
    outputs: Mapping[str, PathLike],
    inputs: Mapping[str, PathLike],
    *,
    new_folders: Collection[str] = (),
    read_folders: Collection[str] | Mapping[str, Collection[str]] = (),
) -> None:
    """Refuse an output that would replace, or be written over, one of the command's inputs.

    Parameters
    ----------
    outputs
        Each output option (as messages name it, e.g. ``"--out"``) → the path it writes;
        None: not given. A file, or a folder the command writes files into.
    inputs
        Each input option → the file or folder it reads; None: not given.
    new_folders
        Output options naming a folder the command fills as its own (new or empty): no input
        and no other output may lie in it.
    read_folders
        Input options naming a folder whose files the command reads (raw tables, a model):
        an output file that already exists in it is refused. As a mapping, each option →
        the entries of its folder the command reads (file or subfolder names, e.g.
        ``("site.json", "data")``): only an existing output under one of them is refused.

    Raises
    ------
    ConfigError
        One line naming the output's option and path and the input's (or other output's).
    """
    written = list(_given(outputs))
    read = list(_given(inputs))
    for out_option, out in written:
        for in_option, inp in read:
            if same_place(out, inp):
                raise ConfigError(
                    f"{out_option} {out} is {in_option} {inp}{_how(out, inp)}: the output "
                    f"would replace the input; write {out_option} elsewhere"
                )
    for out_option, folder in written:
        if out_option not in new_folders:
            continue
        others = [*read, *((o, p) for o, p in written if o != out_option)]
        for option, path in others:
            if lies_within(path, folder):
                raise ConfigError(
                    f"{out_option} {folder} holds {option} {path}: {out_option} is a folder "
                    f"this command fills; choose one that holds none of its inputs or outputs"
                )
    for in_option, folder in read:
        if in_option not in read_folders:
            continue
        entries = read_folders.get(in_option) if isinstance(read_folders, Mapping) else None
        for out_option, out in written:
            if out_option in new_folders or not out.is_file() or not lies_within(out, folder):
                continue
            if _under_read_entry(out, folder, entries):
                raise ConfigError(
                    f"{out_option} {out} is a file of {in_option} {folder}, which this command "
                    f"reads: the output would replace it; write {out_option} elsewhere"
                )


def _under_read_entry(path: Path, folder: Path, entries: Collection[str] | None) -> bool:
    """Whether ``path`` (within ``folder``) lies under an entry read (None: the whole folder)."""
    if entries is None:
        return True
    try:
        relative = _resolved(path).relative_to(_resolved(folder))
    except ValueError:  # within it through a link: judged as read
        return True
    return not relative.parts or relative.parts[0] in entries
