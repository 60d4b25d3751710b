"""Parsing ``diabetic_data.csv`` and checking it: columns, numbers and label sources.

Every problem is a :class:`~fedcare_core.errors.DataError` naming the file, and where known the
column and the 1-based data rows; when the last row is at fault and the file does not end with
a newline, the message adds that the file looks truncated.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fedcare_core.data.diabetes130.schema import (
    DIABETES130_COLUMNS,
    DIABETES130_CSV_NAME,
    INTEGER_SOURCE_COLUMNS,
    NUMERIC_SOURCE_COLUMNS,
    READMITTED_VALUES,
    TIME_IN_HOSPITAL_RANGE,
)
from fedcare_core.errors import DataError

__all__ = [
    "Checker",
    "check_columns",
    "check_sources",
    "data_rows",
    "numeric_column",
    "parse_csv",
    "read_table",
]


def data_rows(mask: pd.Series | np.ndarray) -> list[int]:
    """1-based data row numbers where ``mask`` is true.

    Parameters
    ----------
    mask
        One boolean per data row.

    Returns
    -------
    list of int
        The row numbers, ascending.

    """
    return (np.flatnonzero(np.asarray(mask, dtype=bool)) + 1).tolist()


@dataclass(frozen=True)
class Checker:
    """Builds DataErrors for one file, adding a truncation hint where it applies.

    Parameters
    ----------
    name
        The file's display name.
    n_rows
        Number of data rows.
    ends_with_newline
        Whether the file's last line is complete.

    """

    name: str | None
    n_rows: int
    ends_with_newline: bool

    def error(self, message: str, column: str, mask: pd.Series | np.ndarray) -> DataError:
        """A DataError about ``column`` in the rows where ``mask`` is true."""
        rows = data_rows(mask)
        if not self.ends_with_newline and rows and rows[-1] == self.n_rows:
            message += "; the last line does not end with a newline, so the file looks truncated"
        return DataError(message, file=self.name, column=column, rows=rows)


def parse_csv(data: bytes, name: str) -> pd.DataFrame:
    """Parse the CSV bytes: ``?`` and empty fields are missing; ``None``/``NA`` stay strings.

    Parameters
    ----------
    data
        The file's bytes.
    name
        Its display name, for errors.

    Returns
    -------
    pandas.DataFrame
        Numeric source columns as pandas infers them; every other column as strings.

    Raises
    ------
    DataError
        If the file is empty, malformed, not UTF-8 or cannot be parsed.

    """
    if not data.strip():
        raise DataError("the file is empty", file=name)
    read_kw: dict[str, object] = {
        "keep_default_na": False,
        "na_values": ["?", ""],
        "encoding": "utf-8-sig",
        "low_memory": False,
    }
    try:
        header = pd.read_csv(io.BytesIO(data), nrows=0, **read_kw)  # type: ignore[call-overload]
        numeric = set(NUMERIC_SOURCE_COLUMNS)
        dtype = {c: str for c in header.columns if c not in numeric}
        df: pd.DataFrame = pd.read_csv(  # type: ignore[call-overload]
            io.BytesIO(data), dtype=dtype, **read_kw
        )
    except pd.errors.EmptyDataError as exc:
        raise DataError("the file is empty", file=name) from exc
    except pd.errors.ParserError as exc:
        import re  # here: this function is the only one of the module that needs it

        detail = " ".join(str(exc).split())  # pandas' text ends in a newline: one line
        # pandas counts file lines (the header is line 1); the message counts data rows.
        ragged = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", detail)
        if ragged is not None:
            expected, line, saw = (int(g) for g in ragged.groups())
            raise DataError(
                f"{saw} fields, the header has {expected} (a ragged row)",
                file=name,
                rows=[line - 1],
            ) from exc
        raise DataError(
            f"malformed CSV; the file may be truncated or have ragged rows ({detail})", file=name
        ) from exc
    except UnicodeDecodeError as exc:
        raise DataError(f"not UTF-8 text ({exc})", file=name) from exc
    except ValueError as exc:
        raise DataError(f"cannot parse the CSV ({' '.join(str(exc).split())})", file=name) from exc
    return df


def check_columns(df: pd.DataFrame, name: str) -> list[str]:
    """Raise if an expected column is missing; return unexpected (ignored) columns.

    Parameters
    ----------
    df
        The parsed file.
    name
        Its display name, for errors.

    Returns
    -------
    list of str
        Columns not in :data:`DIABETES130_COLUMNS`, in file order.

    Raises
    ------
    DataError
        If a column is missing (the message lists unexpected columns as possible renames).

    """
    cols = [str(c) for c in df.columns]
    missing = [c for c in DIABETES130_COLUMNS if c not in cols]
    unexpected = [c for c in cols if c not in DIABETES130_COLUMNS]
    if missing:
        msg = f"missing column(s): {', '.join(repr(c) for c in missing)}"
        if unexpected:
            msg += (
                f"; unexpected column(s): {', '.join(repr(c) for c in unexpected)} "
                "(renamed or misspelt?)"
            )
        msg += f". Expected the {len(DIABETES130_COLUMNS)} columns of {DIABETES130_CSV_NAME}."
        raise DataError(msg, file=name, column=missing[0] if len(missing) == 1 else None)
    return unexpected


def read_table(data: bytes, name: str) -> tuple[pd.DataFrame, list[str], Checker]:
    """Parse the file and check its columns and that it has data rows.

    Parameters
    ----------
    data
        The file's bytes.
    name
        Its display name, for errors.

    Returns
    -------
    df, unexpected, checker
        The parsed rows, the ignored unexpected columns and the file's error builder.

    Raises
    ------
    DataError
        As :func:`parse_csv` and :func:`check_columns`, or if there is no data row.

    """
    df = parse_csv(data, name)
    unexpected = check_columns(df, name)
    if len(df) == 0:
        raise DataError("the file has a header but no data rows", file=name)
    return df, unexpected, Checker(name, len(df), data.rstrip(b" \t").endswith(b"\n"))


def numeric_column(df: pd.DataFrame, column: str, chk: Checker) -> pd.Series:
    """Column as float; raise on non-numeric (or, where required, non-integer) values.

    Parameters
    ----------
    df
        The parsed file.
    column
        A column of :data:`NUMERIC_SOURCE_COLUMNS`.
    chk
        The file's error builder.

    Returns
    -------
    pandas.Series
        float64 values, NaN where missing.

    Raises
    ------
    DataError
        If a value is not a number (true/false included), is infinite, or is fractional in an
        integer column.

    """
    raw = df[column]
    flags = (
        raw.notna()
        if pd.api.types.is_bool_dtype(raw.dtype)
        else raw.map(lambda v: isinstance(v, bool))  # pandas' object columns only
        if raw.dtype == object
        else None
    )
    if flags is not None and flags.any():
        raise chk.error("true/false value(s) in a numeric column", column, flags)
    if pd.api.types.is_numeric_dtype(raw.dtype):
        values = raw.astype("float64")
    else:
        values = pd.to_numeric(raw, errors="coerce").astype("float64")
        bad = raw.notna() & values.isna()
        if bad.any():
            raise chk.error("non-numeric value(s) in a numeric column", column, bad)
    finite = np.isfinite(values.to_numpy()) | values.isna().to_numpy()
    if not finite.all():
        raise chk.error("infinite value(s) in a numeric column", column, ~finite)
    if column in INTEGER_SOURCE_COLUMNS:
        frac = values.notna() & (values != np.floor(values))
        if frac.any():
            raise chk.error("non-integer value(s) in an integer column", column, frac)
    return values


def check_sources(df: pd.DataFrame, chk: Checker) -> dict[str, pd.Series]:
    """Check the label sources and numeric columns; return the numeric columns as floats.

    ``readmitted`` is checked first: a truncated last row usually shows up there.

    Parameters
    ----------
    df
        The parsed file.
    chk
        The file's error builder.

    Returns
    -------
    dict of str to pandas.Series
        Each column of :data:`NUMERIC_SOURCE_COLUMNS` as float64.

    Raises
    ------
    DataError
        If ``readmitted`` is outside NO/<30/>30, a numeric column holds a bad value,
        ``time_in_hospital`` is outside 1..14 or ``patient_nbr`` is missing.

    """
    readmitted = df["readmitted"]
    bad = ~readmitted.isin(READMITTED_VALUES)
    if bad.any():
        missing_hint = (
            " (missing or empty: a row may be truncated or have fewer than "
            f"{len(DIABETES130_COLUMNS)} fields)"
            if readmitted[bad].isna().any()
            else ""
        )
        raise chk.error(
            f"readmitted must be one of {', '.join(READMITTED_VALUES)}{missing_hint}",
            "readmitted",
            bad,
        )
    numbers = {c: numeric_column(df, c, chk) for c in NUMERIC_SOURCE_COLUMNS}
    tih = numbers["time_in_hospital"]
    lo, hi = TIME_IN_HOSPITAL_RANGE
    bad = tih.isna() | (tih < lo) | (tih > hi)
    if bad.any():
        raise chk.error(
            f"time_in_hospital must be a whole number of days from {lo} to {hi}",
            "time_in_hospital",
            bad,
        )
    patient_nbr = numbers["patient_nbr"]
    if patient_nbr.isna().any():
        raise chk.error("patient_nbr is missing", "patient_nbr", patient_nbr.isna())
    return numbers
