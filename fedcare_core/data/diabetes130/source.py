"""Finding ``diabetic_data.csv`` (plain, or inside a ``.zip``) and reading its bytes.

An archive is streamed, never extracted to disk.
"""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

from fedcare_core.data.diabetes130.schema import DIABETES130_CSV_NAME, DIABETES130_URL
from fedcare_core.errors import DataError

__all__ = ["find_csv_member", "find_diabetes130", "read_source"]


def find_csv_member(zip_path: str | Path) -> str | None:
    """Name the archive member whose basename is ``diabetic_data.csv``.

    Parameters
    ----------
    zip_path
        A ``.zip`` archive.

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
            and n.replace("\\", "/").rsplit("/", 1)[-1] == DIABETES130_CSV_NAME
        ]
    if len(names) > 1:
        raise DataError(
            f"the archive holds {len(names)} files named {DIABETES130_CSV_NAME} "
            f"({', '.join(sorted(names))}): keep one, or point --data-dir at the CSV itself",
            file=str(zip_path),
        )
    return names[0] if names else None


def _zip_holds_csv(zip_path: Path) -> bool:
    """Whether ``zip_path`` is a readable archive holding the CSV (unreadable ones are skipped)."""
    try:
        return find_csv_member(zip_path) is not None
    except (zipfile.BadZipFile, OSError, EOFError):
        return False


def _depth_key(root: Path, p: Path) -> tuple[int, str]:
    """Sort key preferring shallower paths under ``root``, then alphabetical order."""
    rel = p.relative_to(root)
    return (len(rel.parts), str(rel))


def find_diabetes130(data_dir: str | Path) -> Path:
    """Locate ``diabetic_data.csv``, or an archive holding it.

    Parameters
    ----------
    data_dir
        A path to ``diabetic_data.csv`` (any CSV file named explicitly is accepted), to a
        ``.zip`` archive holding a member called ``diabetic_data.csv`` at any depth, or a
        directory searched recursively for either. In a directory a plain CSV is preferred over
        an archive, and a shallower match over a deeper one.

    Returns
    -------
    Path
        The CSV file or the archive.

    Raises
    ------
    DataError
        If the path does not exist, an archive named explicitly is unreadable or lacks the CSV,
        or a directory holds neither.

    """
    path = Path(data_dir).expanduser()
    if not path.exists():
        raise DataError("path does not exist", file=str(path))
    if path.is_file():
        if path.suffix.lower() == ".zip":
            try:
                member = find_csv_member(path)
            except (zipfile.BadZipFile, OSError, EOFError) as exc:
                raise DataError(f"not a readable zip archive ({exc})", file=str(path)) from exc
            if member is None:
                raise DataError(
                    f"the archive holds no member named {DIABETES130_CSV_NAME}", file=str(path)
                )
        return path
    csvs = sorted(path.rglob(DIABETES130_CSV_NAME), key=lambda p: _depth_key(path, p))
    csvs = [p for p in csvs if p.is_file()]
    if csvs:
        return csvs[0]
    zips = sorted(
        (p for p in path.rglob("*") if p.suffix.lower() == ".zip" and p.is_file()),
        key=lambda p: _depth_key(path, p),
    )
    for z in zips:
        if _zip_holds_csv(z):
            return z
    raise DataError(
        f"no {DIABETES130_CSV_NAME}, and no .zip archive holding it, found in directory "
        f"{path} (searched recursively). Download it from {DIABETES130_URL} or with "
        "fedcare_core.data.fetch.fetch_diabetes130()."
    )


def read_source(source: Path) -> tuple[bytes, str]:
    """Return the CSV's bytes and a display name (``archive.zip:member`` for an archive).

    Parameters
    ----------
    source
        The CSV file or the archive, as :func:`find_diabetes130` returns it.

    Returns
    -------
    data, name
        The CSV's bytes and the name used in error messages.

    Raises
    ------
    DataError
        If the file or archive cannot be read, or the archive lacks the CSV.

    """
    if source.suffix.lower() == ".zip":
        try:
            member = find_csv_member(source)
            if member is None:
                raise DataError(
                    f"the archive holds no member named {DIABETES130_CSV_NAME}", file=str(source)
                )
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
