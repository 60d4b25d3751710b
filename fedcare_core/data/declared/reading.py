"""Reading a declared dataset's source files into one raw table, rows traced to their file.

Several files are one table (each with every declared column, in any order; others ignored).
CSV is read as text (the declared ``missing_values`` missing), compressed or not (``.gz``,
``.bz2``, ``.xz``, ``.zst``), plain or inside a ``.zip`` archive (streamed); Parquet keeps its
types. A fault is one
:class:`~fedcare_core.errors.DataError` naming the file, and the column and 1-based data rows
where known (:class:`TableRows`), never a value.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from fedcare_core.data.declared.model import DatasetDeclaration, Source
from fedcare_core.data.source_files import find_source, read_source
from fedcare_core.errors import ChecksumError, DataError, MissingColumnsError
from fedcare_core.files.csv_header import refuse_shifted_header

__all__ = [
    "ColumnOrigin",
    "RawTable",
    "SourceFile",
    "TableRows",
    "locate_files",
    "read_raw_table",
]

_PARQUET = (".parquet", ".pq")


@dataclass(frozen=True)
class ColumnOrigin:
    """Where an extracted table's column comes from: a raw table's file, column and rows.

    Parameters
    ----------
    file
        The raw table's file.
    column
        The raw column.
    rows
        Per table row, its 1-based data row in that file.
    """

    file: str
    column: str
    rows: np.ndarray


@dataclass(frozen=True)
class TableRows:
    """Where each row of a table came from, to name the file and its rows in a message.

    Parameters
    ----------
    files
        The files' display names.
    file_of_row
        Per table row, the index of its file.
    row_in_file
        Per table row, its 1-based data row in that file.
    names
        A declared column → its name in the files, where they differ (messages name the
        column as the files do).
    complete
        Per file, whether its last line ends with a newline (else a message about its last row
        adds that the file looks truncated).
    origins
        A column of a table an extractor built → the raw table it comes from (messages name
        that file, column and rows).
    """

    files: tuple[str, ...]
    file_of_row: np.ndarray
    row_in_file: np.ndarray
    names: Mapping[str, str] = field(default_factory=dict)
    complete: tuple[bool, ...] = ()
    origins: Mapping[str, ColumnOrigin] = field(default_factory=dict)

    def source_name(self, column: str) -> str:
        """``column`` as its raw table names it, where an extractor built it; else itself."""
        origin = self.origins.get(column)
        return column if origin is None else origin.column

    def error(self, message: str, column: str | None, mask: np.ndarray | pd.Series) -> DataError:
        """The :class:`DataError` of the rows where ``mask`` is true (the first file's)."""
        origin = None if column is None else self.origins.get(column)
        if origin is not None:
            # Stays sharing an admission share its row: each row named once.
            bad_rows = np.unique(origin.rows[np.asarray(mask, dtype=bool)])
            return DataError(
                message, file=origin.file, column=origin.column, rows=bad_rows.tolist()
            )
        if column is not None and column in self.names:
            message = f"{message} ({self.names[column]} is the definition's {column})"
            column = self.names[column]
        bad = np.flatnonzero(np.asarray(mask, dtype=bool))
        if len(bad) == 0:
            return DataError(message, file=", ".join(self.files), column=column)
        first = self.file_of_row[bad[0]]
        rows = self.row_in_file[bad[self.file_of_row[bad] == first]]
        last = int(np.count_nonzero(self.file_of_row == first))
        if self.complete and not self.complete[first] and int(rows[-1]) == last:
            message += "; the last line does not end with a newline, so the file looks truncated"
        return DataError(message, file=self.files[first], column=column, rows=rows.tolist())

    def subset(self, keep: np.ndarray) -> TableRows:
        """The rows of ``keep`` (a boolean mask)."""
        origins = {c: ColumnOrigin(o.file, o.column, o.rows[keep]) for c, o in self.origins.items()}
        return TableRows(
            self.files,
            self.file_of_row[keep],
            self.row_in_file[keep],
            self.names,
            self.complete,
            origins,
        )


@dataclass(frozen=True)
class RawTable:
    """The source's rows as read, and where each came from.

    Parameters
    ----------
    frame
        The declared columns (and identifiers), on a fresh index.
    rows
        Each row's file and row number.
    sha256
        One digest of every file's bytes, in order (provenance).
    ignored
        Columns present but not declared (ignored), for the notes.
    notes
        What reading it found worth saying (a declared SHA-256 not enforced: whether it
        matches).
    test_rows
        Rows a published split holds out for testing (an extractor's; None: no such split).
    header
        The columns read, named as declared, in the first file's order (empty: not told).
    """

    frame: pd.DataFrame
    rows: TableRows
    sha256: str
    ignored: tuple[str, ...]
    notes: tuple[str, ...] = ()
    test_rows: np.ndarray | None = None
    header: tuple[str, ...] = ()


@dataclass(frozen=True)
class SourceFile:
    """One source file found: the file, or the ``.zip`` archive holding it, and its name."""

    path: Path
    name: str


def locate_files(declaration: DatasetDeclaration, root: Path | None) -> tuple[SourceFile, ...]:
    """The source files: as written if absolute, else under ``root``, else beside the definition.

    Each is searched recursively, plain or inside a ``.zip``
    (:func:`fedcare_core.data.source_files.find_source`). ``root`` may be a file itself (or
    an archive) when the source is one file.

    Raises
    ------
    DataError
        A file found nowhere (the message says where it was looked for).
    """
    names = declaration.source.files
    if root is not None and _is_file(root):
        if len(names) != 1:
            raise DataError(
                f"the dataset {declaration.name} reads {len(names)} files; give the folder "
                "holding them",
                file=str(root),
            )
        found = find_source(root, Path(names[0]).name)  # an archive must hold it
        return (SourceFile(found, Path(names[0]).name),)
    folders = [*(() if root is None else (root,)), declaration.path.parent]
    try:
        return tuple(_find(declaration, name, folders) for name in names)
    except DataError as exc:
        if root is not None:
            raise
        raise DataError(  # a newcomer's first run: say how to name the data folder
            f"{exc.message.rstrip('.')}; no data folder was given, so it was looked for beside "
            "the definition: pass --data-dir DIR (a flow: data_dir) or set FEDCARE_DATA_DIR=DIR",
            file=exc.file,
        ) from None


def _find(declaration: DatasetDeclaration, name: str, folders: Sequence[Path]) -> SourceFile:
    given = Path(name).expanduser()
    if given.is_absolute():
        return SourceFile(find_source(given, given.name), given.name)
    hint = declaration.source.missing_hint
    first: DataError | None = None
    for folder in folders:
        exact = folder / given
        if _is_file(exact):
            return SourceFile(exact, given.name)
        try:
            return SourceFile(find_source(folder, given.name, hint), given.name)
        except DataError as exc:
            first = first or exc
    assert first is not None
    raise first


def _is_file(path: Path) -> bool:
    """Whether ``path`` is a file (False where it cannot be told: an unreadable folder)."""
    try:
        return path.is_file()
    except OSError:
        return False


def read_raw_table(
    declaration: DatasetDeclaration,
    files: Sequence[SourceFile],
    *,
    verify_checksum: bool,
    columns: Sequence[str] | None = None,
) -> RawTable:
    """Read and join the source files, checking each has every declared column.

    Parameters
    ----------
    declaration
        The checked definition.
    files
        The files (:func:`locate_files`).
    verify_checksum
        Refuse a file that does not match a declared SHA-256.
    columns
        The declared columns to read besides the identifiers (rows to score hold no labels);
        None: every declared column.

    Raises
    ------
    ChecksumError
        A declared SHA-256 that the one file does not match (with ``verify_checksum``).
    DataError
        An unreadable, empty or malformed file, one lacking a column read, or one naming a
        column twice in its header.
    """
    source = declaration.source
    declared = [*declaration.identifiers, *(declaration.columns if columns is None else columns)]
    needed = [source.file_name(c) for c in declared]
    frames: list[pd.DataFrame] = []
    digest = hashlib.sha256()
    ignored: dict[str, None] = {}
    shown: list[str] = []
    complete: list[bool] = []
    notes: list[str] = []
    header: list[str] = []
    for found in files:
        data, display = read_source(found.path, found.name)
        shown.append(display)
        complete.append(data.rstrip(b" \t").endswith(b"\n"))
        digest.update(data)
        if declaration.source.sha256 is not None:
            notes.extend(_check_sha256(data, declaration.source.sha256, display, verify_checksum))
        archived = found.path.suffix.lower() == ".zip"
        base = found.name if archived else found.path.name  # its compression, its format
        frame = _parse(data, display, base, declaration.source, needed)
        ignored.update(dict.fromkeys(c for c in frame.columns if c not in needed))
        header = header or [declared[needed.index(c)] for c in frame.columns if c in needed]
        frames.append(frame.loc[:, needed].set_axis(declared, axis=1))
    sizes = [len(f) for f in frames]
    table = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    rows = TableRows(
        tuple(shown),
        np.repeat(np.arange(len(files)), sizes),
        np.concatenate([np.arange(1, n + 1) for n in sizes]),
        {v: k for k, v in source.rename.items() if k != v},
        tuple(complete),
    )
    return RawTable(
        table.reset_index(drop=True),
        rows,
        digest.hexdigest(),
        tuple(ignored),
        tuple(notes),
        header=tuple(header),
    )


def _check_sha256(data: bytes, expected: str, name: str, enforce: bool) -> list[str]:
    """Refuse a file that is not the published one (``enforce``), else note whether it is."""
    got = hashlib.sha256(data).hexdigest()
    if not enforce:
        match = "matches" if got == expected else "does NOT match"
        return [f"checksum not enforced; SHA-256 {got} {match} the published file"]
    if got != expected:
        base = name.replace(":", "/").rsplit("/", 1)[-1]
        raise ChecksumError(
            f"SHA-256 mismatch: expected {expected}, got {got}. This is not the published "
            f"{base} (modified, truncated or a different version). Pass --no-verify "
            "(verify_checksum=False) to load a modified file on purpose.",
            file=name,
        )
    return []


def _parse(
    data: bytes, name: str, base: str, source: Source, needed: Sequence[str]
) -> pd.DataFrame:
    is_parquet = source.format == "parquet" or (
        source.format is None and base.lower().endswith(_PARQUET)
    )
    if not is_parquet:  # a header shifted against its rows: the header's fault, not each row's
        refuse_shifted_header(
            data, file=name, name=base, delimiter=source.delimiter, expected=needed
        )
    try:
        frame = _read_parquet(data) if is_parquet else _read_csv(data, name, base, source)
    except DataError:
        raise
    except UnicodeDecodeError as exc:
        raise DataError(f"not UTF-8 text ({exc})", file=name) from None
    except pd.errors.EmptyDataError:
        raise DataError("the file is empty", file=name) from None
    except pd.errors.ParserError as exc:
        raise _parser_error(exc, name) from None
    except (ValueError, OSError, EOFError) as exc:
        detail = " ".join(str(exc).split())[:200]
        kind = "Parquet" if is_parquet else "CSV"
        raise DataError(f"cannot read it as {kind} ({detail})", file=name) from None
    frame.columns = [str(c).strip() for c in frame.columns]
    _check_columns(frame, needed, name, base)
    if len(frame) == 0:
        raise DataError("the file has a header but no data rows", file=name)
    return frame


def _parser_error(exc: pd.errors.ParserError, name: str) -> DataError:
    """Pandas' parse error in words; a ragged row named by its data row."""
    import re

    detail = " ".join(str(exc).split())
    ragged = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", detail)
    if ragged is None:
        return DataError(
            f"malformed CSV; the file may be truncated or have ragged rows ({detail})", file=name
        )
    expected, line, saw = (int(g) for g in ragged.groups())
    # pandas counts file lines (the header is line 1); the message counts data rows.
    return DataError(
        f"{saw} fields, the header has {expected} (a ragged row)", file=name, rows=[line - 1]
    )


def _read_parquet(data: bytes) -> pd.DataFrame:
    import io

    return pd.read_parquet(io.BytesIO(data))


def _read_csv(data: bytes, name: str, base: str, source: Source) -> pd.DataFrame:
    import io

    compression = _compression(base.lower())
    if compression is None and not data.strip():
        raise DataError("the file is empty", file=name)
    return pd.read_csv(
        io.BytesIO(data),
        dtype=str,
        keep_default_na=False,
        na_values=list(source.missing_values),
        sep=source.delimiter,
        encoding="utf-8-sig",
        compression=compression,  # type: ignore[arg-type]
        low_memory=False,
    )


def _compression(name: str) -> str | None:
    for suffix, kind in ((".gz", "gzip"), (".bz2", "bz2"), (".xz", "xz")):
        if name.endswith(suffix):
            return kind
    return "zstd" if name.endswith(".zst") else None


def _check_columns(frame: pd.DataFrame, needed: Sequence[str], name: str, base: str) -> None:
    present = list(frame.columns)
    # pandas renames a repeated header name X to X.1, X.2, ...
    repeated = sorted({c for c in present if present.count(c) > 1}) or [
        c for c in present if f"{c}.1" in present and f"{c}.1" not in needed
    ]
    if repeated:
        raise DataError(f"column {repeated[0]!r} appears twice in the header", file=name)
    missing = [c for c in needed if c not in present]
    if not missing:
        return
    extra = [c for c in present if c not in needed]
    message = f"missing column(s): {', '.join(repr(c) for c in missing)}"
    if extra:
        message += (
            f"; unexpected column(s): {', '.join(repr(c) for c in extra)} (renamed or misspelt?)"
        )
    message += f". Expected the {len(needed)} columns of {base}."
    raise MissingColumnsError(message, file=name, missing=missing, unexpected=extra)
