"""Finding and streaming the MIMIC-III CSV tables.

A table is ``NAME.csv`` or ``NAME.csv.gz`` with the file name and headers in upper or lower
case. Tables are read in chunks of the spec's columns only, so the full ``CHARTEVENTS`` (about
33 GB) is never held in memory; every problem with a file becomes a
:class:`~fedcare_core.errors.DataError` naming the file, and where known the column and rows.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from fedcare_core.data.mimic3.schema import TableSpec
from fedcare_core.errors import DataError
from fedcare_core.files.csv_header import file_text_start, header_shift_problem

__all__ = [
    "check_field_counts",
    "check_last_line",
    "check_numbers",
    "file_sha256",
    "find_table",
    "iter_table",
    "read_header",
    "read_small",
]

#: Most offending row numbers collected per column when locating non-numeric values.
_NUMERIC_DIAG_CAP = 1_000_000
#: Bytes read from a file's end to look at its last line.
_TAIL_BYTES = 1 << 16


def find_table(data_dir: Path, table: str, *, required: bool) -> Path | None:
    """Return the file holding ``table`` in ``data_dir``: ``NAME.csv`` or ``NAME.csv.gz``, any case.

    Parameters
    ----------
    data_dir
        The directory searched (not recursively).
    table
        Table name, upper case.
    required
        Whether a missing table is an error (else ``None`` is returned).

    Returns
    -------
    Path or None
        The file, or ``None`` when an optional table is absent.

    Raises
    ------
    DataError
        If a required table is missing (the message lists the CSV files found) or two files
        could hold the same table.

    """
    wanted = {f"{table.lower()}.csv", f"{table.lower()}.csv.gz"}
    entries = sorted(p for p in data_dir.iterdir() if p.is_file())
    hits = [p for p in entries if p.name.lower() in wanted]
    if len(hits) > 1:
        names = ", ".join(p.name for p in hits)
        raise DataError(f"several files could hold MIMIC-III table {table} in {data_dir}: {names}")
    if hits:
        return hits[0]
    if not required:
        return None
    found = [p.name for p in entries if p.name.lower().endswith((".csv", ".csv.gz"))]
    listing = ", ".join(found) if found else "no CSV files"
    raise DataError(
        f"required MIMIC-III table {table} not found in {data_dir} "
        f"(expected {table}.csv or {table}.csv.gz, upper or lower case); found: {listing}"
    )


def read_header(path: Path, spec: TableSpec) -> dict[str, str]:
    """Map each wanted upper-case column to its spelling in ``path``'s header.

    Parameters
    ----------
    path
        The table's file.
    spec
        The columns wanted.

    Returns
    -------
    dict of str to str
        Upper-case name → name as written, for each column present (optional ones may be
        absent).

    Raises
    ------
    DataError
        If the file is empty or unreadable, or a required column is missing.

    """
    try:
        cols = pd.read_csv(path, nrows=0).columns
    except pd.errors.EmptyDataError:
        raise DataError(f"the {spec.name} file is empty", file=str(path)) from None
    except (OSError, UnicodeDecodeError, EOFError, pd.errors.ParserError) as exc:
        raise DataError(f"cannot read the {spec.name} file as CSV: {exc}", file=str(path)) from exc
    start = file_text_start(path)  # a header shifted against its rows: named as such
    problem = None
    if start is not None:
        problem = header_shift_problem(start[0], whole=start[1], expected=spec.columns)
    if problem is not None:
        raise DataError(f"the {spec.name} table: {problem}", file=str(path))
    by_upper: dict[str, str] = {}
    for c in cols:
        by_upper.setdefault(str(c).strip().upper(), str(c))
    out: dict[str, str] = {}
    for col in spec.columns:
        if col in by_upper:
            out[col] = by_upper[col]
        elif col not in spec.optional:
            raise DataError(
                f"required column {col} is missing from the {spec.name} table "
                f"(columns found: {', '.join(str(c) for c in cols)})",
                file=str(path),
                column=col,
            )
    return out


def iter_table(path: Path, spec: TableSpec, chunksize: int) -> Iterator[pd.DataFrame]:
    """Yield ``path`` in chunks of the spec's columns, upper-cased, plus ``_ROW`` (1-based).

    Parameters
    ----------
    path
        The table's file (``.csv`` or ``.csv.gz``).
    spec
        The columns read and their types.
    chunksize
        Rows per chunk.

    Yields
    ------
    pandas.DataFrame
        A non-empty chunk: numeric columns as float64, text columns as strings, and ``_ROW``,
        the 1-based data row number in the file.

    Raises
    ------
    DataError
        If the file cannot be read, is malformed, has no data rows, or a numeric column holds
        a non-numeric value (the column and the offending rows are named).

    """
    names = read_header(path, spec)
    check_last_line(path, spec)
    dtype: dict[str, str] = {names[c]: "float64" for c in spec.numeric if c in names}
    dtype.update({names[c]: "str" for c in spec.text if c in names})
    rename = {actual: upper for upper, actual in names.items()}
    offset = 0
    try:
        reader = pd.read_csv(path, usecols=list(dtype), dtype=dtype, chunksize=chunksize)
        with reader:
            for chunk in reader:
                chunk = chunk.rename(columns=rename)
                chunk["_ROW"] = np.arange(offset + 1, offset + len(chunk) + 1, dtype=np.int64)
                offset += len(chunk)
                check_numbers(chunk, spec, path)
                if len(chunk):
                    yield chunk
    except ValueError as exc:
        if isinstance(exc, pd.errors.ParserError):
            raise DataError(
                f"malformed CSV in the {spec.name} table: {exc}", file=str(path)
            ) from exc
        located = _locate_non_numeric(path, spec, names, chunksize)
        if located is not None:
            raise located from None
        raise DataError(f"cannot read the {spec.name} table: {exc}", file=str(path)) from exc
    except EOFError as exc:
        raise DataError(
            f"the {spec.name} file looks truncated: its compressed stream ends early ({exc})",
            file=str(path),
        ) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read the {spec.name} table: {exc}", file=str(path)) from exc
    if offset == 0:
        raise DataError(f"the {spec.name} file has a header but no data rows", file=str(path))


def check_numbers(chunk: pd.DataFrame, spec: TableSpec, path: Path) -> None:
    """Refuse infinite numbers, and identifiers (``*ID`` columns) that are not whole and positive.

    Parameters
    ----------
    chunk
        Rows of the table with ``_ROW``, numeric columns as float64.
    spec
        The table's spec (its numeric columns are checked).
    path
        The file, for messages.

    Raises
    ------
    DataError
        Naming the file, the column and the rows.

    """
    for col in spec.numeric:
        if col not in chunk.columns:
            continue
        values = chunk[col].to_numpy(dtype=np.float64)
        bad = np.isinf(values)
        what = "infinite value(s)"
        if col.endswith("ID") and not bad.any():
            bad = ~np.isnan(values) & ((values < 1) | (values != np.floor(values)))
            what = "identifier(s) that are not whole positive numbers"
        if bad.any():
            raise DataError(
                f"{what} in column {col} of the {spec.name} table",
                file=str(path),
                column=col,
                rows=chunk["_ROW"].to_numpy()[bad].tolist(),
            )


def _locate_non_numeric(
    path: Path, spec: TableSpec, names: Mapping[str, str], chunksize: int
) -> DataError | None:
    """Re-read ``path`` as text to find non-numeric values in numeric columns (error path only)."""
    numeric = [c for c in spec.numeric if c in names]
    bad: dict[str, list[int]] = {}
    offset = 0
    reader = pd.read_csv(
        path,
        usecols=[names[c] for c in numeric],
        dtype=str,
        chunksize=max(chunksize, 100_000),
    )
    with reader:
        for chunk in reader:
            for col in numeric:
                raw = chunk[names[col]]
                mask = (raw.notna() & pd.to_numeric(raw, errors="coerce").isna()).to_numpy()
                if mask.any():
                    idx = np.flatnonzero(mask)
                    rows = bad.setdefault(col, [])
                    if len(rows) < _NUMERIC_DIAG_CAP:
                        rows.extend((offset + idx + 1).tolist())
            offset += len(chunk)
    if not bad:
        return None
    col = next(c for c in numeric if c in bad)
    others = [c for c in numeric if c in bad and c != col]
    also = f" (columns {', '.join(others)} also hold non-numeric values)" if others else ""
    return DataError(
        f"non-numeric value in numeric column {col} of the {spec.name} table{also}",
        file=str(path),
        column=col,
        rows=bad[col],
    )


def check_last_line(path: Path, spec: TableSpec) -> None:
    """Refuse a plain CSV whose last line is cut off: no final newline and fields missing.

    A compressed table is checked as it is read (a cut stream ends early). A last line without
    a newline but with every field is accepted: it may be a file saved without one.

    Parameters
    ----------
    path
        The table's file.
    spec
        Its spec, for the message.

    Raises
    ------
    DataError
        If the last line has fewer fields than the header and does not end with a newline.

    """
    if path.name.lower().endswith(".gz"):
        return
    try:
        with path.open("rb") as fh:
            header = fh.readline()
            size = fh.seek(0, 2)
            fh.seek(max(size - _TAIL_BYTES, len(header)))
            tail = fh.read()
    except OSError as exc:
        raise DataError(f"cannot read the {spec.name} table: {exc}", file=str(path)) from exc
    if not tail or tail.endswith((b"\n", b"\r")):
        return
    last = tail.rsplit(b"\n", 1)[-1].decode("utf-8", errors="replace")
    width = len(next(csv.reader([header.decode("utf-8", errors="replace")]), []))
    fields = next(csv.reader([last]), [])
    if len(fields) < width:
        raise DataError(
            f"the {spec.name} file looks truncated: its last line ends mid-row "
            f"({len(fields)} of {width} fields, no final newline)",
            file=str(path),
            rows=[_count_data_rows(path)],
        )


def _count_data_rows(path: Path) -> int:
    """Data rows in a plain CSV (lines after the header, the unterminated last one included)."""
    with path.open("rb") as fh:
        return max(sum(block.count(b"\n") for block in iter(lambda: fh.read(1 << 20), b"")), 1)


def read_small(path: Path, spec: TableSpec, chunksize: int) -> pd.DataFrame:
    """Read a whole (small) table through :func:`iter_table`.

    Parameters
    ----------
    path, spec, chunksize
        As for :func:`iter_table`.

    Returns
    -------
    pandas.DataFrame
        Every row, with ``_ROW``.

    """
    chunks = list(iter_table(path, spec, chunksize))
    check_field_counts(path, spec)
    return pd.concat(chunks, ignore_index=True)


def check_field_counts(path: Path, spec: TableSpec) -> None:
    """Refuse rows with more or fewer fields than the header (pandas pads short rows silently).

    Only for the tables read whole (ICUSTAYS, ADMISSIONS, PATIENTS: tens of thousands of rows
    in the full release); the event tables are too large for a row-by-row pass.

    Parameters
    ----------
    path
        The table's file (``.csv`` or ``.csv.gz``).
    spec
        Its spec, for the message.

    Raises
    ------
    DataError
        Naming the file and the rows whose field count differs from the header's.

    """
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    with opener(path, "rt", newline="", encoding="utf-8", errors="replace") as fh:
        rows = csv.reader(fh)
        width = len(next(rows, []))
        bad = [i for i, row in enumerate(rows, start=1) if row and len(row) != width]
    if bad:
        raise DataError(
            f"{len(bad)} row(s) of the {spec.name} table do not have the header's {width} fields "
            "(a ragged or damaged row)",
            file=str(path),
            rows=bad,
        )


def file_sha256(path: Path) -> str:
    """SHA-256 of the file's bytes (as stored: a ``.csv.gz`` is hashed compressed).

    Parameters
    ----------
    path
        The file.

    Returns
    -------
    str
        The hex digest.

    """
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
