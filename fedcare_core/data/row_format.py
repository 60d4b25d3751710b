"""What a dataset's rows to score hold (:func:`fedcare_core.data.rows.row_format` finds it)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

import pandas as pd

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
