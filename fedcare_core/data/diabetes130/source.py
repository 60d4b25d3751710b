"""Finding ``diabetic_data.csv`` (plain, or inside a ``.zip``) and reading its bytes.

The search is :mod:`fedcare_core.data.source_files`'s, for the file's name; an archive is
streamed, never extracted to disk.
"""

from __future__ import annotations

from pathlib import Path

from fedcare_core.data.diabetes130.schema import DIABETES130_CSV_NAME, DIABETES130_URL
from fedcare_core.data.source_files import find_member, find_source
from fedcare_core.data.source_files import read_source as read_named_source

__all__ = ["MISSING_HINT", "find_csv_member", "find_diabetes130", "read_source"]

#: What a "not found" message adds: where the published file is.
MISSING_HINT = (
    f"Download it from {DIABETES130_URL} or with 'fedcare data fetch diabetes130' (a run "
    "without --data-dir then reads it)."
)


def find_csv_member(zip_path: str | Path) -> str | None:
    """Name the archive member whose basename is ``diabetic_data.csv`` (None: there is none)."""
    return find_member(zip_path, DIABETES130_CSV_NAME)


def find_diabetes130(data_dir: str | Path) -> Path:
    """Locate ``diabetic_data.csv``, or an archive holding it (:func:`find_source`)."""
    return find_source(data_dir, DIABETES130_CSV_NAME, MISSING_HINT)


def read_source(source: Path) -> tuple[bytes, str]:
    """The CSV's bytes and its display name (``archive.zip:member`` for an archive)."""
    return read_named_source(source, DIABETES130_CSV_NAME)
