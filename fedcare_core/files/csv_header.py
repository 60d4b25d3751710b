"""A CSV header shifted against its rows, named as the header's fault.

A header with a column name missing (or one too many) makes every value of every row land one
column off: pandas takes a row's extra first field as the row's index, or pads a short row with
a missing last value, and what follows are complaints about bad values in every row, none of
them naming the header. :func:`header_shift_problem` compares the header's field count with its
rows' (the first :data:`SAMPLE_ROWS` rows, read as the ``csv`` module reads them, quotes and
all): when every row agrees with the others and not with the header, it says so, with the
names the header lacks or has too many. Rows that disagree among themselves are ragged rows,
left to the row checks that name them.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import lzma
from collections.abc import Collection
from pathlib import Path
from typing import BinaryIO

from fedcare_core.errors import DataError

__all__ = [
    "SAMPLE_BYTES",
    "SAMPLE_ROWS",
    "file_text_start",
    "header_shift_problem",
    "refuse_shifted_header",
    "text_start",
]

#: How many data rows are compared with the header.
SAMPLE_ROWS = 200
#: How much of a file (decompressed) is read for them.
SAMPLE_BYTES = 1 << 20
#: Names a message lists at most.
_NAMES_SHOWN = 5


def text_start(data: bytes, name: str) -> tuple[str, bool] | None:
    """The first :data:`SAMPLE_BYTES` of a CSV file's text, and whether that is all of it.

    Parameters
    ----------
    data
        The file's bytes, compressed as its name says (``.gz``, ``.bz2``, ``.xz``, ``.zst``).
    name
        The file's name (its suffix picks the decompression).

    Returns
    -------
    (str, bool) or None
        The text (UTF-8, undecodable bytes replaced) and whether it is the whole file; None
        where the data cannot be decompressed (the reader reports that).
    """
    return _start(io.BytesIO(data), name)


def file_text_start(path: Path) -> tuple[str, bool] | None:
    """:func:`text_start` of a file on disk, reading (and decompressing) only its start."""
    try:
        with path.open("rb") as fh:
            return _start(fh, path.name)
    except OSError:
        return None


def _start(stream: BinaryIO, name: str) -> tuple[str, bool] | None:
    lower = name.lower()
    openers = {".gz": gzip.GzipFile, ".bz2": bz2.BZ2File, ".xz": lzma.LZMAFile}
    try:
        opener = next((o for s, o in openers.items() if lower.endswith(s)), None)
        if opener is not None:
            with opener(fileobj=stream) if opener is gzip.GzipFile else opener(stream) as inner:
                raw = inner.read(SAMPLE_BYTES + 1)
        elif lower.endswith(".zst"):
            import zstandard

            raw = zstandard.ZstdDecompressor().stream_reader(stream).read(SAMPLE_BYTES + 1)
        else:
            raw = stream.read(SAMPLE_BYTES + 1)
    except (OSError, EOFError, ValueError, ImportError, lzma.LZMAError):
        return None
    whole = len(raw) <= SAMPLE_BYTES
    return raw[:SAMPLE_BYTES].decode("utf-8-sig", errors="replace"), whole


def header_shift_problem(
    text: str, *, whole: bool, delimiter: str = ",", expected: Collection[str] = ()
) -> str | None:
    """Why the header of the CSV ``text`` looks shifted against its rows (None: it does not).

    Parameters
    ----------
    text
        The start of the file (:func:`text_start`).
    whole
        Whether ``text`` is the whole file (else its last line may be cut and is not counted;
        neither is a whole file's last line without a newline).
    delimiter
        The field delimiter.
    expected
        The column names the reader looks for (a message names those the header lacks, or
        the header's names that are none of them where no more than the names too many).

    Returns
    -------
    str or None
        ``the header names 49 fields but each of its rows holds 50: …`` (no value of any row).
    """
    if not whole or not text.endswith(("\n", "\r")):
        # a last line without its newline may be cut (the end of the sample, or a truncated
        # file: the row checks name that): it is not counted
        text = text[: max(text.rfind("\n"), text.rfind("\r")) + 1]
    records = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = next(records, None)
        widths = []
        for record in records:
            if record and any(field.strip() for field in record):  # blank lines are skipped
                widths.append(len(record))
            if len(widths) >= SAMPLE_ROWS:
                break
    except csv.Error:
        return None
    if header is None or not widths or len(set(widths)) != 1 or widths[0] == len(header):
        return None
    width, named = widths[0], [h.strip() for h in header]
    rows = (
        "each of its rows" if len(widths) < SAMPLE_ROWS else f"each of its first {len(widths)} rows"
    )
    gap = abs(width - len(header))
    if width > len(header):
        present = {n.upper() for n in named}
        absent = [str(e) for e in expected if str(e).upper() not in present]
        what = f"{gap} column name{'s' if gap > 1 else ''} missing from it" + _names(absent)
    else:
        wanted = {str(e).upper() for e in expected}
        extra = [n for n in named if wanted and n.upper() not in wanted]
        # a reader reading some columns only cannot tell which of the others is one too many
        shown = extra if len(extra) <= gap else []
        what = f"{gap} name{'s' if gap > 1 else ''} too many in it" + _names(shown)
    return (
        f"the header looks shifted: it names {len(header)} fields but {rows} holds {width} "
        f"({what}), so every value would be read in the wrong column; correct the header line"
    )


def _names(names: list[str]) -> str:
    """``: 'race'?`` — the names that may be the ones at fault."""
    if not names:
        return ""
    shown = ", ".join(repr(n) for n in names[:_NAMES_SHOWN])
    more = f" and {len(names) - _NAMES_SHOWN} more" if len(names) > _NAMES_SHOWN else ""
    return f": {shown}{more}?"


def refuse_shifted_header(
    data: bytes, *, file: str, name: str, delimiter: str = ",", expected: Collection[str] = ()
) -> None:
    """Refuse the CSV file ``data`` (named ``name``) if its header looks shifted.

    Raises
    ------
    DataError
        Naming ``file`` and the header (:func:`header_shift_problem`), before any row is read.
    """
    start = text_start(data, name)
    if start is None:
        return
    problem = header_shift_problem(start[0], whole=start[1], delimiter=delimiter, expected=expected)
    if problem is not None:
        raise DataError(problem, file=file)
