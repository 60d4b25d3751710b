"""Rows to score with a packaged model: what each dataset's rows hold and how they are read.

A packaged model (:mod:`fedcare_core.model_package`) scores rows of its dataset, labels not
needed, and only needs the columns its client holds (the common features and the client's
private ones): for Diabetes 130-US, columns of ``diabetic_data.csv``
(:mod:`fedcare_core.data.diabetes130.rows`); for MIMIC-III, one row per ICU stay holding the
cohort's features (:mod:`fedcare_core.data.mimic3.rows`); for any other cohort, its feature
columns as they are (:func:`feature_rows`). :func:`row_format` names the reader of each.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fedcare_core.data.categories import CategorySource, check_known_categories
from fedcare_core.errors import DataError

__all__ = [
    "RowFormat",
    "check_row_columns",
    "feature_rows",
    "number_values",
    "row_format",
    "text_values",
]

#: Cells that mean "missing" in a CSV export (besides pandas' own missing values).
MISSING_MARKS = ("", "?")
#: How many missing columns a message names before it counts the rest.
MAX_COLUMNS_SHOWN = 8

#: ``(rows, columns, numeric, source, unseen_categories) -> features``.
FeatureReader = Callable[
    [pd.DataFrame, Sequence[str], Collection[str], str | None, str], pd.DataFrame
]


@dataclass(frozen=True)
class RowFormat:
    """What a dataset's rows to score hold.

    Parameters
    ----------
    dataset
        The dataset's name.
    columns
        Every column a row may need, in the dataset's order (empty: the model's own order).
    integer_columns
        Those that hold whole numbers and are never missing (typed ``long`` in a signature).
    identifiers
        Identifier columns a scoring output keeps for joining (never logged).
    labels
        Label columns, ignored when present.
    features
        Reads the checked features a model needs from rows to score.
    example
        Synthetic rows (never a patient's) to show a model's input; None: none.
    """

    dataset: str
    columns: tuple[str, ...]
    integer_columns: tuple[str, ...]
    identifiers: tuple[str, ...]
    labels: tuple[str, ...]
    features: FeatureReader
    example: Callable[[], pd.DataFrame] | None


def row_format(dataset: str) -> RowFormat:
    """The row format of ``dataset``; a cohort other than the two datasets scores its features."""
    if dataset == "diabetes130":
        from fedcare_core.data.diabetes130 import rows as d

        return RowFormat(
            dataset,
            d.ROW_COLUMNS,
            d.INTEGER_COLUMNS,
            d.IDENTIFIER_COLUMNS,
            d.LABEL_COLUMNS,
            d.features_from_rows,
            d.example_rows,
        )
    if dataset == "mimic3":
        from fedcare_core.data.mimic3 import rows as m

        return RowFormat(
            dataset,
            m.ROW_COLUMNS,
            (),
            m.IDENTIFIER_COLUMNS,
            m.LABEL_COLUMNS,
            m.features_from_rows,
            m.example_rows,
        )
    return RowFormat(dataset, (), (), (), (), feature_rows, None)


def check_row_columns(frame: pd.DataFrame, columns: Sequence[str], source: str | None) -> None:
    """Raise :class:`DataError` naming the columns of ``columns`` that ``frame`` lacks."""
    if not isinstance(frame, pd.DataFrame):
        raise DataError(
            f"rows to score must be a table (a pandas DataFrame), got {type(frame).__name__}",
            file=source,
        )
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        shown = ", ".join(repr(c) for c in missing[:MAX_COLUMNS_SHOWN])
        if len(missing) > MAX_COLUMNS_SHOWN:
            shown += f" and {len(missing) - MAX_COLUMNS_SHOWN} more"
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
    return out.where(~out.isin(MISSING_MARKS), None).astype(object)


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
    vocabularies: Mapping[str, tuple[str, ...]] | None = None,
) -> pd.DataFrame:
    """Rows that hold the features themselves: numbers as float64, the rest as strings.

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
        ``"refuse"`` or ``"other"`` for a value outside a declared vocabulary.
    vocabularies
        The declared vocabularies to check (none: nothing is unseen).

    Returns
    -------
    pandas.DataFrame
        The features, on a fresh index.

    Raises
    ------
    DataError
        If a column is missing, a numeric feature holds text or an infinite number, or (with
        ``"refuse"``) a category is outside its vocabulary; naming the column and rows.
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
    numbered = np.arange(1, len(features) + 1)
    check_known_categories(
        features,
        dict(vocabularies or {}),
        {c: CategorySource(source, c, numbered) for c in vocabularies or {}},
        unseen_categories,
    )
    return features
