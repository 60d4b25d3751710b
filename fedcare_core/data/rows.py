"""Rows to score with a packaged model: what each dataset's rows hold and how they are read.

A packaged model (:mod:`fedcare_core.model_package`) scores rows of its dataset, labels not
needed, and only needs the columns its client holds (the common features and the client's
private ones): for Diabetes 130-US, columns of ``diabetic_data.csv``
(:mod:`fedcare_core.data.diabetes130.rows`); for MIMIC-III, one row per ICU stay holding the
cohort's features (:mod:`fedcare_core.data.mimic3.rows`); for any other cohort, its feature
columns as they are (:func:`~fedcare_core.data.row_values.feature_rows`).
:func:`row_format` names the reader of each.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

import pandas as pd

from fedcare_core.data.diabetes130 import rows as d
from fedcare_core.data.mimic3 import rows as m
from fedcare_core.data.row_values import feature_rows

__all__ = ["RowFormat", "row_format"]

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
