"""What a dataset's rows to score hold (:func:`fedcare_core.data.rows.row_format` finds it)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

#: ``(rows, columns, numeric, source, unseen_categories) -> features``.
FeatureReader = Callable[
    [pd.DataFrame, Sequence[str], Collection[str], str | None, str], pd.DataFrame
]
#: ``(file, columns, unseen_categories) -> (rows, the file's name for messages)``.
FileReader = Callable[[Path, Sequence[str], str], tuple[pd.DataFrame, str]]


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
    rename
        A column of the rows as exported → the column it holds (a site's column map).
    read_file
        Reads rows to score from a file as a run reads the dataset's source, with a run's
        checks of the identifiers and the columns asked for (None: no such reader; the file
        is read as pandas reads a CSV by default).
    """

    dataset: str
    columns: tuple[str, ...]
    integer_columns: tuple[str, ...]
    identifiers: tuple[str, ...]
    labels: tuple[str, ...]
    features: FeatureReader
    example: Callable[[], pd.DataFrame] | None
    rename: Mapping[str, str] = field(default_factory=dict)
    read_file: FileReader | None = None

    def as_declared(self, rows: pd.DataFrame) -> pd.DataFrame:
        """``rows`` with their columns named as the dataset declares them."""
        if not self.rename or not isinstance(rows, pd.DataFrame):
            return rows
        return rows.rename(columns=dict(self.rename))

    def as_exported(self, rows: pd.DataFrame) -> pd.DataFrame:
        """``rows`` with declared columns named back as exported."""
        if not self.rename:
            return rows
        return rows.rename(columns={v: k for k, v in self.rename.items()})
