"""Downloading public data sets into a local cache, verified and written atomically."""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import os
import tempfile
import urllib.error
import urllib.request
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from fedcare_core.data.diabetes130 import (
    DIABETES130_CSV_NAME,
    DIABETES130_CSV_SHA256,
    DIABETES130_URL,
    find_csv_member,
)
from fedcare_core.errors import ChecksumError, DataError

#: Environment variable naming the download cache.
_CACHE_DIR_ENV = "FEDCARE_CACHE_DIR"

#: Progress callback: ``(bytes_done, total_bytes_or_None)``.
ProgressFn = Callable[[int, int | None], None]

_CHUNK = 1 << 20
_USER_AGENT = "fedcare/0.1 (+https://archive.ics.uci.edu)"


def default_cache_dir() -> Path:
    """Return the download cache: ``$FEDCARE_CACHE_DIR`` if set, else ``~/.cache/fedcare``.

    Returns
    -------
    Path
        The cache directory (not created).

    """
    env = os.environ.get(_CACHE_DIR_ENV)
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "fedcare"


def sha256_file(path: str | Path) -> str:
    """Return the hex SHA-256 of a file, read in chunks.

    Parameters
    ----------
    path
        The file.

    Returns
    -------
    str
        Lower-case hex digest.

    """
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


class _Reader(Protocol):
    def read(self, size: int = ..., /) -> bytes: ...


class _Writer(Protocol):
    def write(self, data: bytes, /) -> int: ...


def _unlink_quietly(path: Path | None) -> None:
    if path is not None:
        with contextlib.suppress(OSError):
            path.unlink()


def _make_dirs(path: Path) -> list[Path]:
    """Create ``path`` and missing parents; return the directories created, deepest first."""
    created: list[Path] = []
    p = path
    while not p.exists():
        created.append(p)
        if p.parent == p:
            break
        p = p.parent
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(f"cannot create directory ({exc})", file=str(path)) from exc
    return created


def _remove_empty_dirs(dirs: list[Path]) -> None:
    for d in dirs:
        with contextlib.suppress(OSError):
            d.rmdir()


def _copy_hashing(
    src: _Reader,
    dst: _Writer,
    total: int | None = None,
    progress: ProgressFn | None = None,
) -> tuple[int, str]:
    h = hashlib.sha256()
    done = 0
    while True:
        chunk = src.read(_CHUNK)
        if not chunk:
            break
        dst.write(chunk)
        h.update(chunk)
        done += len(chunk)
        if progress is not None:
            progress(done, total)
    return done, h.hexdigest()


def download(
    url: str,
    dest: Path,
    *,
    expected_sha256: str | None,
    progress: ProgressFn | None = None,
    timeout: float = 60,
) -> Path:
    """Download ``url`` to ``dest``, atomically.

    The body is written to a temporary file in ``dest``'s folder and renamed onto ``dest`` only
    once it is complete and its checksum passes; on any failure the temporary file is removed
    and ``dest`` is left as it was.

    Parameters
    ----------
    url
        What to fetch (``http``, ``https`` or ``file`` URL).
    dest
        Where to put it; its folder is created if needed.
    expected_sha256
        Hex SHA-256 the downloaded bytes must have, or ``None`` to skip the check.
    progress
        Called after each chunk with ``(bytes_done, total)``; ``total`` is ``None`` when the
        server does not send a length.
    timeout
        Socket timeout in seconds.

    Returns
    -------
    Path
        ``dest``.

    Raises
    ------
    ChecksumError
        If the bytes' SHA-256 differs from ``expected_sha256``.
    DataError
        On an HTTP error, a network failure, an incomplete body or a local write error.

    """
    dest = Path(dest)
    created = _make_dirs(dest.parent)
    tmp: Path | None = None
    ok = False
    try:
        fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
        tmp = Path(tmp_name)
        request = urllib.request.Request(url, headers={"User-Agent": _USER_AGENT})
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(request, timeout=timeout) as resp:
            length = resp.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
            done, digest = _copy_hashing(resp, out, total, progress)
        if total is not None and done != total:
            raise DataError(f"incomplete download from {url}: got {done} of {total} bytes")
        if expected_sha256 is not None and digest != expected_sha256.lower():
            raise ChecksumError(
                f"SHA-256 mismatch for the download from {url}: expected {expected_sha256}, "
                f"got {digest}"
            )
        os.replace(tmp, dest)
        tmp = None
        ok = True
        return dest
    except urllib.error.HTTPError as exc:
        raise DataError(f"cannot download {url}: HTTP {exc.code} {exc.reason}") from exc
    except urllib.error.URLError as exc:
        raise DataError(f"cannot download {url}: {exc.reason}") from exc
    except (TimeoutError, http.client.HTTPException) as exc:
        raise DataError(f"cannot download {url}: {exc!r}") from exc
    except OSError as exc:
        raise DataError(f"cannot download {url} to {dest}: {exc}") from exc
    except ValueError as exc:  # e.g. an unknown URL type
        raise DataError(f"cannot download {url}: {exc}") from exc
    finally:
        _unlink_quietly(tmp)
        if not ok:
            _remove_empty_dirs(created)


def _extract_verified(zip_path: Path, csv_path: Path, expected_sha256: str, url: str) -> None:
    """Stream ``diabetic_data.csv`` out of ``zip_path`` onto ``csv_path`` if its hash matches."""
    tmp: Path | None = None
    try:
        try:
            member = find_csv_member(zip_path)
        except (zipfile.BadZipFile, EOFError) as exc:
            raise DataError(
                f"the download from {url} is not a readable zip archive ({exc})"
            ) from exc
        if member is None:
            raise DataError(
                f"the archive downloaded from {url} holds no member named {DIABETES130_CSV_NAME}"
            )
        fd, tmp_name = tempfile.mkstemp(
            dir=csv_path.parent, prefix=f".{csv_path.name}.", suffix=".part"
        )
        tmp = Path(tmp_name)
        with zipfile.ZipFile(zip_path) as zf, zf.open(member) as src, os.fdopen(fd, "wb") as dst:
            _, digest = _copy_hashing(src, dst)
        if digest != expected_sha256.lower():
            raise ChecksumError(
                f"SHA-256 mismatch for {DIABETES130_CSV_NAME} in the archive from {url}: "
                f"expected {expected_sha256}, got {digest}",
                file=f"{zip_path}:{member}",
            )
        os.replace(tmp, csv_path)
        tmp = None
    except (zipfile.BadZipFile, EOFError, zlib.error) as exc:
        raise DataError(
            f"the archive downloaded from {url} is corrupted ({exc})", file=str(zip_path)
        ) from exc
    except OSError as exc:
        raise DataError(
            f"cannot extract {DIABETES130_CSV_NAME} ({exc})", file=str(zip_path)
        ) from exc
    finally:
        _unlink_quietly(tmp)


def fetch_diabetes130(
    cache_dir: Path | None = None,
    *,
    url: str = DIABETES130_URL,
    expected_csv_sha256: str = DIABETES130_CSV_SHA256,
    progress: ProgressFn | None = None,
    timeout: float = 60,
) -> Path:
    """Download Diabetes 130-US into the cache and return the verified ``diabetic_data.csv``.

    The archive is saved as ``<cache_dir>/diabetes130/diabetes130.zip``; ``diabetic_data.csv``
    (found at any depth in it) is extracted next to it only if its SHA-256 matches (the CSV's
    digest is checked, not the archive's, whose layout may change). If a verified CSV is already
    cached, it is returned without any download. On failure, nothing new is left in the cache.

    Parameters
    ----------
    cache_dir
        Cache root; default :func:`default_cache_dir` (``$FEDCARE_CACHE_DIR`` or
        ``~/.cache/fedcare``).
    url
        Archive to download (default: the official UCI URL).
    expected_csv_sha256
        SHA-256 the extracted CSV must have.
    progress
        Download progress callback ``(bytes_done, total_or_None)``.
    timeout
        Socket timeout in seconds.

    Returns
    -------
    Path
        The verified ``diabetic_data.csv`` in the cache.

    Raises
    ------
    ChecksumError
        If the CSV in the archive has another SHA-256.
    DataError
        If the download fails, or the archive is unreadable or lacks the CSV.

    """
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    target = root / "diabetes130"
    csv_path = target / DIABETES130_CSV_NAME
    if csv_path.is_file():
        try:
            if sha256_file(csv_path) == expected_csv_sha256.lower():
                return csv_path
        except OSError:
            pass
    created = _make_dirs(target)
    zip_path = target / "diabetes130.zip"
    ok = False
    try:
        download(url, zip_path, expected_sha256=None, progress=progress, timeout=timeout)
        _extract_verified(zip_path, csv_path, expected_csv_sha256, url)
        ok = True
        return csv_path
    finally:
        if not ok:
            _unlink_quietly(zip_path)
            _remove_empty_dirs(created)
