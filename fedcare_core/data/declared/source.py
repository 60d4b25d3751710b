"""A declared dataset as a :class:`~fedcare_core.data.registry.DatasetSource`.

Everything the registry offers of a dataset, read from its definition file: where its files
are, how they load (:func:`~.loader.load_declared`), its documented definition (the feature
sets ``paper``, the declared partition, and ``admission``, each objective limited to what is
known when it is predicted), the columns of a row to score and how such rows are read (with the
loader's checks), and its patients' keys.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fedcare_core.data.cohort import Cohort
from fedcare_core.data.declared.checks import condition_columns
from fedcare_core.data.declared.labels import label_columns
from fedcare_core.data.declared.loader import (
    check_identifiers,
    check_rows,
    check_rules,
    load_declared,
    read_table,
)
from fedcare_core.data.declared.model import Column, DatasetDeclaration, Value
from fedcare_core.data.declared.reading import SourceFile, TableRows, read_raw_table
from fedcare_core.data.declared.values import column_values, text_of
from fedcare_core.data.definition import DatasetDefinition
from fedcare_core.data.partition import FeaturePartition, at_prediction_time
from fedcare_core.data.row_format import RowFormat
from fedcare_core.data.row_values import check_row_columns
from fedcare_core.errors import ConfigError

__all__ = ["DECLARED_FEATURE_SETS", "DeclaredSource"]

#: Words pandas' CSV reader turns into a missing value by default.
_PANDAS_MISSING_WORDS = frozenset(
    ("", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
     "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null")
)  # fmt: skip

#: The feature sets every declared dataset offers: its partition, and that partition with each
#: objective seeing only what is known when it is predicted.
DECLARED_FEATURE_SETS = ("paper", "admission")


class DeclaredSource:
    """A dataset defined by a file: its rows, definition and row format.

    Parameters
    ----------
    declaration
        The checked definition.
    """

    def __init__(self, declaration: DatasetDeclaration) -> None:
        self.declaration = declaration

    def locate(self, root: Path | None) -> Path:
        """``root`` (the data folder or file), else the definition's folder.

        Raises
        ------
        DataError
            No ``root``, and a source file not beside the definition: the message says how to
            name the data folder (:func:`~.reading.locate_files`).
        """
        if root is not None:
            return root
        if self.declaration.source.extractor is None:
            from fedcare_core.data.declared.reading import locate_files

            locate_files(self.declaration, None)  # found there, or say how to name the folder
        return self.declaration.path.parent

    def load(self, data: Any, path: Path, *, verify_checksum: bool) -> tuple[Cohort, str]:
        """The cohort read from ``path`` under ``data`` (a ``DataConfig``), and the files.

        The label variants are the data settings' ``label_variants`` (``readmission``,
        ``early_discharge``, ``readmission_exclude``); an extractor's table is built with their
        ``cohort`` and ``benchmark_split`` (unset: the extractor's defaults).

        Raises
        ------
        ConfigError
            A selected label reading a feature its objective sees under ``data.features``
            (before any row is read).
        """
        variants = tuple(
            getattr(data, "label_variants", None) or (getattr(data, "readmission", None) or "",)
        )
        self.check_label_sources(
            variants,
            getattr(data, "features", "paper"),
            wide=getattr(data, "objectives_per_client", 1) > 1
            or getattr(data, "rho", None) is not None,
        )
        return load_declared(
            self.declaration,
            path,
            verify_checksum=verify_checksum,
            unseen_categories=data.unseen_categories,
            variants=variants,
            options={
                "cohort": getattr(data, "cohort", None),
                "benchmark_split": getattr(data, "benchmark_split", None),
            },
        )

    def check_label_sources(
        self, variants: Sequence[str], features: str, *, wide: bool = False
    ) -> None:
        """Refuse a selected label that reads a feature its objective sees.

        A definition lets a label read a feature known only after its objective is predicted
        (:mod:`.checks`); feature set ``features`` must then hide it from that objective.

        Parameters
        ----------
        variants
            The selected variant names.
        features
            The feature set (``data.features``).
        wide
            Whether an objective may see more than the common features and its own pool (a
            client pursuing several objectives holds their pools; ``data.rho`` moves pool
            features into the common set): every feature of the partition then counts.

        Raises
        ------
        ConfigError
            Naming the objective, the variant, the feature and the setting to change.
        """
        partition = self.partition(features)
        for o in self.declaration.objectives:
            chosen = o.labelling(variants)
            label = chosen.label
            read = label.columns if isinstance(label, Value) else condition_columns(label)
            shown = (
                set(partition.all_features)
                if wide
                else {*partition.common, *partition.private.get(o.objective.name, ())}
            )
            seen = [c for c in dict.fromkeys(read) if c in shown]
            if seen:
                name = o.objective.name
                how = (
                    "a client pursuing several objectives holds their pools, and --rho moves "
                    "pool features into the common set"
                    if wide
                    else f"under feature set {features!r} (data.features)"
                )
                raise ConfigError(
                    f"the {name} label of variant {chosen.label_variant or 'default'} reads "
                    f"{seen[0]!r}, a feature {name}'s model may see ({how}): it would see part "
                    f"of its answer. Choose --features admission (each objective sees only what "
                    f"is known when it is predicted; {name} at {o.predicted_at}) with one "
                    "objective per client (--objectives-per-client 1) and no --rho, or another "
                    "label"
                )

    def partition(self, features: str) -> FeaturePartition:
        """The partition of feature set ``features`` (:data:`DECLARED_FEATURE_SETS`)."""
        d = self.declaration
        if features == "paper":
            return d.partition
        return at_prediction_time(
            d.partition,
            {c.name: str(c.known_at) for c in d.features},
            {o.objective.name: o.predicted_at for o in d.objectives},
            moves=d.moves,
        )

    def definition(self, features: str) -> DatasetDefinition:
        """Its objectives, the partition of ``features``, its features and vocabularies."""
        d = self.declaration
        return DatasetDefinition(
            tuple(o.objective for o in d.objectives),
            self.partition(features),
            tuple(c.name for c in d.features if c.numeric),
            tuple(c.name for c in d.features if not c.numeric),
            {c.name: v for c in d.features if (v := c.feature_vocabulary) is not None},
        )

    def row_format(self) -> RowFormat:
        """A row to score: the features' columns as the source files hold them."""
        d = self.declaration
        example = self.example_rows()
        return RowFormat(
            d.name,
            tuple(c.name for c in d.features),
            self._whole_number_features(),
            d.identifiers,
            label_columns(d),
            self.features_from_rows,
            None if example is None else example.copy,
            d.source.rename,
            self.rows_from_file,
        )

    def features_from_rows(
        self,
        frame: pd.DataFrame,
        columns: Sequence[str],
        numeric: Collection[str],
        source: str | None,
        unseen_categories: str,
    ) -> pd.DataFrame:
        """The features ``columns`` of rows to score, checked as the loader checks a file.

        Raises
        ------
        DataError
            A missing column, or a value the definition refuses (column and rows named).
        """
        check_row_columns(frame, columns, source)
        d = self.declaration
        rows = frame.loc[:, list(columns)].reset_index(drop=True)
        n = len(rows)
        where = TableRows(
            (source or "the input rows",),
            np.zeros(n, dtype=np.int64),
            np.arange(1, n + 1),
            {v: k for k, v in d.source.rename.items() if k != v},
        )
        # The identifiers a run refuses (missing, of another form, an encounter twice), where
        # the rows hold them; the model never reads them.
        held = [c for c in d.identifiers if c in frame.columns]
        identifiers = frame.loc[:, held].reset_index(drop=True)
        check_identifiers(d, identifiers.apply(self._source_marks_missing), where)
        notes: list[str] = []
        out = {
            c: column_values(
                self._as_read(rows[c], d.columns[c]),
                d.columns[c],  # a gap where the definition allows none is refused, as in a run
                where,
                unseen_categories,
                notes,
                missing_message=d.gap_message(c),
            )
            for c in columns
        }
        check_rules(d, out, where)
        return pd.DataFrame(out, index=rows.index)

    def rows_from_file(
        self, path: Path, columns: Sequence[str], unseen_categories: str
    ) -> tuple[pd.DataFrame, str]:
        """Rows to score read from a file as a run reads its source, and checked as a run does.

        The file (CSV, compressed or not, or Parquet; a ``.zip`` holding the source's file) is
        read by the run's reader (:func:`~.reading.read_raw_table`): the source's missing marks
        missing, a repeated or missing header name refused; its identifiers and ``columns``
        are then checked by the run's checks (:func:`~.loader.check_rows`).

        Parameters
        ----------
        path
            The file.
        columns
            The declared columns a model reads (the identifiers are read too).
        unseen_categories
            ``"refuse"`` or ``"other"``.

        Returns
        -------
        rows, name
            The identifiers and ``columns`` as text, named as declared, in the file's order;
            the file's name for messages.

        Raises
        ------
        DataError
            Naming the file, and the column and rows where known.
        """
        d = self.declaration
        member = Path(d.source.files[0]).name if d.source.files else path.name
        name = member if path.suffix.lower() == ".zip" else path.name
        table = read_raw_table(
            d, (SourceFile(path, name),), verify_checksum=False, columns=list(columns)
        )
        check_rows(d, table, columns, unseen_categories)
        return table.frame.loc[:, list(table.header)], table.rows.files[0]  # the file's order

    def _source_marks_missing(self, values: pd.Series) -> pd.Series:
        """Text cells holding one of the source's missing marks, as missing."""
        marks = set(self.declaration.source.missing_values)
        if values.dtype == object or pd.api.types.is_string_dtype(values.dtype):
            return values.map(lambda v: None if isinstance(v, str) and v.strip() in marks else v)
        return values

    def _whole_number_features(self) -> tuple[str, ...]:
        """Features that hold whole numbers and are never missing (typed ``long``)."""
        return tuple(
            c.name
            for c in self.declaration.features
            if (c.type == "integer" or c.integer_codes) and not c.gaps
        )

    def _as_read(self, values: pd.Series, column: Column) -> pd.Series:
        """A column of rows to score as its CSV is read: the source's missing marks missing.

        A category the file never leaves empty whose vocabulary holds a word pandas reads as
        missing (``None``, ``NA``, ``NULL`` …) reads a missing value as that word: rows read with
        pandas' defaults lose it.
        """
        values = self._source_marks_missing(values)
        words = [v for v in column.vocabulary or () if v in _PANDAS_MISSING_WORDS]
        if not column.gaps and len(words) == 1 and column.type == "categorical":
            values = values.astype(object).where(values.notna(), words[0])
        return values

    def example_rows(self) -> pd.DataFrame | None:
        """Two synthetic rows (never a patient's) built from the declarations.

        None where a feature's raw form cannot be told (an open vocabulary, a declared form).
        """
        first: dict[str, object] = {}
        second: dict[str, object] = {}
        for c in self.declaration.features:
            if c.numeric and c.range is not None:
                low, high = c.range
                first[c.name], second[c.name] = _between(low, high, c.type, 0.25, 0.6)
            elif c.vocabulary is not None and c.pattern is None:
                first[c.name] = c.vocabulary[0]
                second[c.name] = c.vocabulary[min(1, len(c.vocabulary) - 1)]
            else:
                return None
        return pd.DataFrame([first, second])

    def patient_keys(self, path: Path) -> np.ndarray:
        """The distinct patient identifiers of the files under ``path``, as written."""
        from fedcare_core.data.row_values import distinct_keys

        table, _ = read_table(self.declaration, path, verify_checksum=False)
        return distinct_keys(text_of(table.frame[self.declaration.patient]))


def _between(low: float, high: float, kind: str, *fractions: float) -> tuple[object, ...]:
    values = [low + f * (high - low) for f in fractions]
    return tuple(round(v) if kind == "integer" else round(v, 2) for v in values)
