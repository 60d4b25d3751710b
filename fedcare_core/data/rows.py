"""Rows to score with a packaged model: what each dataset's rows hold and how they are read.

A packaged model (:mod:`fedcare_core.predict.package`) scores rows of its dataset, labels not
needed, and only needs the columns its client holds (the common features and the client's
private ones): for Diabetes 130-US, MIMIC-III and every dataset defined by a file, columns
of the table its definition declares (read by it:
:class:`fedcare_core.data.declared.DeclaredSource`; MIMIC-III's is one row per ICU stay, the
table its extractor builds); for any other cohort, its feature columns as they are
(:func:`~fedcare_core.data.row_values.feature_rows`).
:func:`row_format` names the reader of each.
"""

from __future__ import annotations

from fedcare_core.data.row_format import FeatureReader, RowFormat
from fedcare_core.data.row_values import feature_rows

__all__ = ["FeatureReader", "RowFormat", "row_format"]


def row_format(dataset: str, definition: str | None = None) -> RowFormat:
    """The row format of ``dataset``; a cohort of no registered dataset scores its features.

    ``definition``: the text of the dataset's definition file (a packaged model carries it),
    which then says how a row is read, wherever the model is scored.
    """
    from fedcare_core.data.registry import registered

    if definition is not None:
        from fedcare_core.data.declared import declared_source_of_text

        return declared_source_of_text(definition, f"the {dataset} model's definition").row_format()
    spec = registered(dataset)
    if spec is None:
        return RowFormat(dataset, (), (), (), (), feature_rows, None)
    return spec.load_source().row_format()
