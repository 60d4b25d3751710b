"""Reading the values of rows to score: presence of columns, text, numbers, feature rows.

The leaf the datasets' row readers (:mod:`fedcare_core.data.declared.source`) and
:mod:`fedcare_core.data.rows` share.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
import pandas as pd

from fedcare_core.errors import DataError

__all__ = [
    "check_row_columns",
    "distinct_keys",
    "feature_rows",
    "number_values",
    "text_values",
]

#: Cells that mean "missing" in a CSV export (besides pandas' own missing values).
_MISSING_MARKS = ("", "?")
#: How many missing columns a message names before it counts the rest.
_MAX_COLUMNS_SHOWN = 8


def check_row_columns(frame: pd.DataFrame, columns: Sequence[str], source: str | None) -> None:
    """Raise :class:`DataError` naming the columns of ``columns`` that ``frame`` lacks."""
    if not isinstance(frame, pd.DataFrame):
        raise DataError(
            f"rows to score must be a table (a pandas DataFrame), got {type(frame).__name__}",
            file=source,
        )
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        shown = ", ".join(repr(c) for c in missing[:_MAX_COLUMNS_SHOWN])
        if len(missing) > _MAX_COLUMNS_SHOWN:
            shown += f" and {len(missing) - _MAX_COLUMNS_SHOWN} more"
        raise DataError(
            f"missing {len(missing)} of the {len(columns)} feature columns this model reads "
            f"(those its client holds): {shown}",
            file=source,
            column=missing[0] if len(missing) == 1 else None,
        )


def text_values(values: pd.Series) -> pd.Series:
    """A column as stripped strings, every missing mark (NaN, None, ``""``, ``"?"``) missing."""
    out = values.astype(object).where(values.notna(), None)
    out = out.map(lambda v: None if v is None else str(v).strip())
    return out.where(~out.isin(_MISSING_MARKS), None).astype(object)


def number_values(values: pd.Series, column: str, source: str | None) -> pd.Series:
    """A numeric feature as float64 (missing marks missing); text or ±inf is refused.

    Raises
    ------
    DataError
        Naming the column and the 1-based rows.
    """
    raw = values if pd.api.types.is_numeric_dtype(values.dtype) else text_values(values)
    out = pd.to_numeric(raw, errors="coerce").astype(np.float64)
    bad = (raw.notna() & out.isna()).to_numpy() | np.isinf(out.to_numpy())
    if bad.any():
        raise DataError(
            "a numeric feature must hold a finite number (or be missing)",
            file=source,
            column=column,
            rows=(np.flatnonzero(bad) + 1).tolist(),
        )
    return out


def feature_rows(
    frame: pd.DataFrame,
    columns: Sequence[str],
    numeric: Collection[str],
    source: str | None,
    unseen_categories: str,
) -> pd.DataFrame:
    """Rows that hold the features themselves: numbers as float64, the rest as strings.

    For a cohort without a declared vocabulary (nothing is unseen).

    Parameters
    ----------
    frame
        The rows (other columns ignored).
    columns
        The feature columns needed, in order.
    numeric
        Which of them are numeric.
    source
        What the rows are, for messages.
    unseen_categories
        The policy for a value outside a declared vocabulary (none is declared here).

    Returns
    -------
    pandas.DataFrame
        The features, on a fresh index.

    Raises
    ------
    DataError
        If a column is missing, or a numeric feature holds text or an infinite number; naming
        the column and rows.
    """
    check_row_columns(frame, columns, source)
    rows = frame.loc[:, list(columns)].reset_index(drop=True)
    features = pd.DataFrame(
        {
            c: number_values(rows[c], c, source)
            if c in numeric
            else text_values(rows[c]).astype("str")
            for c in columns
        },
        index=rows.index,
    )
    return features


def distinct_keys(column: pd.Series) -> np.ndarray:
    """A patient column's distinct values as sorted strings (missing ones dropped)."""
    return np.unique(column.dropna().astype(str).str.strip().to_numpy(dtype=str))
