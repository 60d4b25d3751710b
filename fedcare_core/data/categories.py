"""Known value sets: refuse a category a column has never been documented to hold, or map it.

Every declared vocabulary (``DIABETES130_VOCABULARIES``, ``MIMIC3_VOCABULARIES``) is a
data-dictionary fact. A value outside it is most often a corrupted or mis-exported file, so by
default (``unseen_categories="refuse"``) the loader stops and names the file, the column and
the rows (or the number of rows), never the values themselves. ``"other"`` is the explicit
opt-in for a site whose export legitimately holds more codes: those values are kept and every
client encodes them in the column's ``other`` indicator (see
:mod:`fedcare_core.data.preprocess`), and the cohort's notes say how many there were.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fedcare_core.config.limits import UNSEEN_CATEGORY_POLICIES
from fedcare_core.errors import DataError

__all__ = [
    "UNSEEN_CATEGORY_POLICIES",
    "CategorySource",
    "check_known_categories",
    "unseen_categories_message",
]

#: How many known values a message lists before it summarises the rest.
_MAX_KNOWN_SHOWN = 12


@dataclass(frozen=True)
class CategorySource:
    """Where a feature column comes from, for messages.

    Parameters
    ----------
    file
        The file holding the raw column.
    column
        The raw column's name in that file.
    rows
        1-based data rows of that file, one per feature row; ``None`` when feature rows do not
        map one to one onto the file's rows (the message then gives a count).

    """

    file: str | None
    column: str
    rows: np.ndarray | None = None


def check_known_categories(
    features: pd.DataFrame,
    vocabularies: Mapping[str, Sequence[str]],
    sources: Mapping[str, CategorySource],
    policy: str,
) -> list[str]:
    """Check every declared-vocabulary column of ``features`` against its vocabulary.

    Parameters
    ----------
    features
        Feature columns as strings (missing values are allowed and never "unseen").
    vocabularies
        The declared vocabularies, by feature column; columns absent from ``features`` are
        skipped.
    sources
        Where each checked feature column comes from (file, raw column, rows).
    policy
        ``"refuse"`` or ``"other"`` (see :data:`UNSEEN_CATEGORY_POLICIES`).

    Returns
    -------
    list of str
        With ``"other"``: one note per column holding unseen values (counts only).

    Raises
    ------
    DataError
        With ``"refuse"``: at the first column holding a value outside its vocabulary, naming
        the file, the raw column and the rows (or their number); the known values are listed,
        the unseen ones never.
    ValueError
        If ``policy`` is not one of :data:`UNSEEN_CATEGORY_POLICIES`.

    """
    if policy not in UNSEEN_CATEGORY_POLICIES:
        raise ValueError(f"unknown unseen-category policy {policy!r}")
    notes: list[str] = []
    for col, vocabulary in vocabularies.items():
        if col not in features.columns:
            continue
        values = features[col]
        unseen = (values.notna() & ~values.isin(list(vocabulary))).to_numpy(dtype=bool)
        if not unseen.any():
            continue
        source = sources[col]
        n = int(unseen.sum())
        if policy == "other":
            notes.append(
                f"{source.column}: {n} value(s) outside its known categories encoded as "
                "'other' (--unseen-categories other)"
            )
            continue
        raise _unseen_error(source, unseen, vocabulary)
    return notes


def unseen_categories_message(n: int, vocabulary: Sequence[str]) -> str:
    """The refusal of ``n`` values outside ``vocabulary``: the known values and the way out."""
    known = ", ".join(repr(v) for v in vocabulary[:_MAX_KNOWN_SHOWN])
    if len(vocabulary) > _MAX_KNOWN_SHOWN:
        known += f" … ({len(vocabulary)} in all)"
    return (
        f"{n} value(s) outside the column's known categories ({known}); if the site's export "
        "legitimately holds other codes, pass --unseen-categories other (data.unseen_categories) "
        "to encode them as 'other'"
    )


def _unseen_error(
    source: CategorySource, unseen: np.ndarray, vocabulary: Sequence[str]
) -> DataError:
    """The refusal for one column: where, how many, the known values and the way out."""
    n = int(unseen.sum())
    message = unseen_categories_message(n, vocabulary)
    rows = None if source.rows is None else np.asarray(source.rows)[unseen].tolist()
    if rows is None:
        message = f"{message} [{n} cohort row(s); rows not listed]"
    return DataError(message, file=source.file, column=source.column, rows=rows)
