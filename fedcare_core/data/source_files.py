"""Finding a dataset's source file (plain, or inside a ``.zip``) and reading its bytes.

A file is named by its base name: a path to it, a ``.zip`` archive holding a member of that
name at any depth, or a folder searched recursively for either (a plain file preferred over an
archive, a shallower match over a deeper one). An archive is streamed, never extracted to disk.
Diabetes 130-US (:mod:`fedcare_core.data.diabetes130.source`) and every dataset defined by a
file (:mod:`fedcare_core.data.declared.reading`) find their files here.
"""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

from fedcare_core.errors import DataError

__all__ = ["find_member", "find_source", "read_source"]


def find_member(zip_path: str | Path, name: str) -> str | None:
    """Name the archive member whose basename is ``name``.

    Parameters
    ----------
    zip_path
        A ``.zip`` archive.
    name
        The file's base name.

    Returns
    -------
    str or None
        The member's name, or ``None`` if there is none. macOS resource forks
        (``__MACOSX/``) are not candidates.

    Raises
    ------
    DataError
        If several members could be the file: which one is meant is the user's call.
    zipfile.BadZipFile, OSError
        If the archive cannot be read.

    """
    with zipfile.ZipFile(zip_path) as zf:
        names = [
            n
            for n in zf.namelist()
            if not n.endswith("/")
            and not n.replace("\\", "/").startswith("__MACOSX/")
            and n.replace("\\", "/").rsplit("/", 1)[-1] == name
        ]
    if len(names) > 1:
        raise DataError(
            f"the archive holds {len(names)} files named {name} "
            f"({', '.join(sorted(names))}): keep one, or point --data-dir at the CSV itself",
            file=str(zip_path),
        )
    return names[0] if names else None


def _zip_holds(zip_path: Path, name: str) -> bool:
    """Whether ``zip_path`` is a readable archive holding ``name`` (unreadable ones skipped)."""
    try:
        return find_member(zip_path, name) is not None
    except (zipfile.BadZipFile, OSError, EOFError):
        return False


def _depth_key(root: Path, p: Path) -> tuple[int, str]:
    """Sort key preferring shallower paths under ``root``, then alphabetical order."""
    rel = p.relative_to(root)
    return (len(rel.parts), str(rel))


def find_source(data_dir: str | Path, name: str, hint: str = "") -> Path:
    """Locate the file ``name``, or an archive holding it.

    Parameters
    ----------
    data_dir
        A path to the file (any file named explicitly is accepted), to a ``.zip`` archive
        holding a member called ``name`` at any depth, or a directory searched recursively for
        either. In a directory a plain file is preferred over an archive, and a shallower match
        over a deeper one.
    name
        The file's base name.
    hint
        What the message says after "not found" (e.g. where to download it).

    Returns
    -------
    Path
        The file or the archive.

    Raises
    ------
    DataError
        If the path does not exist, an archive named explicitly is unreadable or lacks the file,
        or a directory holds neither.

    """
    path = Path(data_dir).expanduser()
    if not path.exists():
        raise DataError("path does not exist", file=str(path))
    if path.is_file():
        if path.suffix.lower() == ".zip":
            try:
                member = find_member(path, name)
            except (zipfile.BadZipFile, OSError, EOFError) as exc:
                raise DataError(f"not a readable zip archive ({exc})", file=str(path)) from exc
            if member is None:
                raise DataError(f"the archive holds no member named {name}", file=str(path))
        return path
    csvs = sorted(path.rglob(name), key=lambda p: _depth_key(path, p))
    csvs = [p for p in csvs if p.is_file()]
    if csvs:
        return csvs[0]
    zips = sorted(
        (p for p in path.rglob("*") if p.suffix.lower() == ".zip" and p.is_file()),
        key=lambda p: _depth_key(path, p),
    )
    for z in zips:
        if _zip_holds(z, name):
            return z
    raise DataError(
        f"no {name}, and no .zip archive holding it, found in directory {path} (searched "
        "recursively)." + (f" {hint}" if hint else "")
    )


def read_source(source: Path, name: str) -> tuple[bytes, str]:
    """Return the CSV's bytes and a display name (``archive.zip:member`` for an archive).

    Parameters
    ----------
    source
        The file or the archive, as :func:`find_source` returns it.
    name
        The file's base name (the member read from an archive).

    Returns
    -------
    data, name
        The file's bytes and the name used in error messages.

    Raises
    ------
    DataError
        If the file or archive cannot be read, or the archive lacks the file.

    """
    if source.suffix.lower() == ".zip":
        try:
            member = find_member(source, name)
            if member is None:
                raise DataError(f"the archive holds no member named {name}", file=str(source))
            with zipfile.ZipFile(source) as zf, zf.open(member) as fh:
                data = fh.read()
        except (zipfile.BadZipFile, EOFError, zlib.error, zipfile.LargeZipFile) as exc:
            raise DataError(
                f"not a readable zip archive; it may be truncated or corrupted ({exc})",
                file=str(source),
            ) from exc
        except OSError as exc:
            raise DataError(f"cannot read the archive ({exc})", file=str(source)) from exc
        return data, f"{source}:{member}"
    try:
        return source.read_bytes(), str(source)
    except OSError as exc:
        raise DataError(f"cannot read the file ({exc})", file=str(source)) from exc
