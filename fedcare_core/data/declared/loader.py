"""Loading a declared dataset: its files read, every column checked, labels derived.

The order is that of a data dictionary's checks: the files and their columns
(:mod:`.reading`), the identifiers (present; the encounter unique), every declared column
(:mod:`.values`), the cohort's rule, then the labels (:mod:`.labels`). The cohort holds the
features only (numbers as float64, categories as strings), the patient key as an integer code
(never written anywhere), the strata column when declared and the sensitive attributes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fedcare_core.data.cohort import Cohort
from fedcare_core.data.declared.extractors import extract_table
from fedcare_core.data.declared.labels import evaluate, label_notes, objective_label
from fedcare_core.data.declared.model import DatasetDeclaration
from fedcare_core.data.declared.reading import (
    RawTable,
    TableRows,
    locate_files,
    read_raw_table,
)
from fedcare_core.data.declared.values import column_values, text_of

__all__ = ["load_declared", "read_table"]


def load_declared(
    declaration: DatasetDeclaration,
    root: Path | None,
    *,
    verify_checksum: bool = True,
    unseen_categories: str = "refuse",
    variants: str | Sequence[str] | None = None,
    options: Mapping[str, Any] | None = None,
) -> tuple[Cohort, str]:
    """The cohort of a declared dataset, and the files read (for messages).

    Parameters
    ----------
    declaration
        The checked definition.
    root
        The data folder (or the one source file); None: beside the definition.
    verify_checksum
        Check a declared SHA-256.
    unseen_categories
        ``"refuse"`` or ``"other"``: a category outside its declared vocabulary.
    variants
        The selected label variants' names (``DataConfig.label_variants``: e.g. ``("30d",
        "los", "deaths")``); each objective takes the label and the exclusion of the first of
        its declared variants selected, else its own (a name it does not declare changes
        nothing).
    options
        The extractor's options, for a source an extractor builds
        (:mod:`~fedcare_core.data.declared.extractors`).

    Returns
    -------
    cohort, source
        One row per (kept) source row; where it was read, as a path a later read takes (the one
        file or archive, else the folder searched).

    Raises
    ------
    DataError
        Naming the file, the column and the rows at fault.
    """
    table, read = read_table(declaration, root, verify_checksum=verify_checksum, options=options)
    patient = _identifiers(declaration, table)
    notes: list[str] = []
    values = _typed_columns(declaration, table, unseen_categories, notes)
    for rule in declaration.rules:
        broken = evaluate(rule.when, values) == 1.0
        if broken.any():
            raise table.rows.error(rule.message, rule.column, broken)
    keep = np.ones(len(table.frame), dtype=bool)
    if declaration.include is not None:
        keep = evaluate(declaration.include, values) == 1.0
        notes.append(f"cohort rule: {int((~keep).sum()):,} of {len(keep):,} rows left out")
    labels = pd.DataFrame(
        {
            o.objective.name: objective_label(o, values, table.rows, variants)[keep]
            for o in declaration.objectives
        }
    )
    notes += label_notes(declaration, values, keep, variants, labels)
    features = pd.DataFrame(
        {c.name: values[c.name][keep].reset_index(drop=True) for c in declaration.features}
    )
    codes = _patient_codes(patient[keep], declaration.numbering)
    extractor = declaration.source.extractor
    source = f"the {extractor} extractor" if extractor else ", ".join(table.rows.files)
    notes[:0] = [
        f"source: {source}",
        f"{int(keep.sum()):,} rows, {int(codes.max(initial=-1)) + 1:,} distinct patients",
    ]
    notes += table.notes
    if table.ignored:
        notes.append(f"ignored unexpected column(s): {', '.join(table.ignored)}")
    strata = declaration.strata
    return (
        Cohort(
            dataset=declaration.name,
            features=features,
            numeric_features=tuple(c.name for c in declaration.features if c.numeric),
            categorical_features=tuple(c.name for c in declaration.features if not c.numeric),
            labels=labels,
            objectives=tuple(o.objective for o in declaration.objectives),
            patient=codes,
            strata=None if strata is None else _strata(values[strata][keep]),
            source_sha256=table.sha256,
            notes=tuple(notes),
            vocabularies=_vocabularies(declaration),
            test_patients=(
                None if table.test_rows is None else np.unique(codes[table.test_rows[keep]])
            ),
            sensitive=declaration.sensitive,
        ),
        read,
    )


def _typed_columns(
    declaration: DatasetDeclaration, table: RawTable, unseen_categories: str, notes: list[str]
) -> dict[str, pd.Series]:
    """Every declared column checked and typed (:func:`~.values.column_values`).

    The columns labels and rules read first, the last first: a short or truncated row shows in
    its last columns.
    """
    sources = [c for c in declaration.columns if declaration.columns[c].known_at is None]
    order = [*reversed(sources), *(c.name for c in declaration.features)]
    return {
        name: column_values(
            table.frame[name],
            declaration.columns[name],
            table.rows,
            unseen_categories,
            notes,
            missing_message=declaration.gap_message(name),
            fields=len(declaration.identifiers) + len(declaration.columns),
        )
        for name in order
    }


def read_table(
    declaration: DatasetDeclaration,
    root: Path | None,
    *,
    verify_checksum: bool,
    options: Mapping[str, Any] | None = None,
) -> tuple[RawTable, str]:
    """The raw table (its files read, or its extractor run), and where, as a path to reread.

    Parameters
    ----------
    declaration
        The checked definition.
    root
        The data folder (or the one source file); None: beside the definition.
    verify_checksum
        Check a declared SHA-256.
    options
        The extractor's options (None values: its defaults).
    """
    if declaration.source.extractor is not None:
        return extract_table(declaration, root, options or {}), str(root)
    files = locate_files(declaration, root)
    table = read_raw_table(declaration, files, verify_checksum=verify_checksum)
    read = str(files[0].path) if len(files) == 1 else str(root or declaration.path.parent)
    return table, read


def _patient_codes(keys: np.ndarray, numbering: str) -> np.ndarray:
    """Each row's patient as 0..n-1: in order of first appearance, or of ascending key.

    Ascending keys compare as numbers when every key is a whole number, else as text.
    """
    if numbering == "ascending":
        text = pd.Series(keys, dtype=object)
        whole = text.str.fullmatch(r"[0-9]+").all()
        order = text.astype("int64").to_numpy() if whole else text.to_numpy(dtype=str)
        _, codes = np.unique(order, return_inverse=True)
        return np.asarray(codes, dtype=np.int64)
    codes, _ = pd.factorize(keys, sort=False)
    return np.asarray(codes, dtype=np.int64)


def _strata(values: pd.Series) -> pd.Series:
    """The strata column (a missing value is its own stratum, ``UNKNOWN``)."""
    return values.fillna("UNKNOWN").astype("str").reset_index(drop=True)


def _identifiers(declaration: DatasetDeclaration, table: RawTable) -> np.ndarray:
    """The patient key per row (text); refuse a missing one, or a repeated encounter."""
    rows: TableRows = table.rows
    texts = {c: text_of(table.frame[c]) for c in declaration.identifiers}
    for column, text in texts.items():
        if text.isna().any():
            raise rows.error(declaration.gap_message(column), column, text.isna().to_numpy())
    _check_identifier_form(declaration, texts, rows)
    if declaration.encounter is not None:
        encounter = texts[declaration.encounter]
        repeated = encounter.duplicated(keep=False).to_numpy()
        if repeated.any():
            raise rows.error(
                f"{declaration.encounter} repeats ({int(repeated.sum())} rows share "
                f"{int(encounter[repeated].nunique())} encounter ids): each encounter must "
                "appear once",
                declaration.encounter,
                repeated,
            )
    return texts[declaration.patient].to_numpy(dtype=object)


def _check_identifier_form(
    declaration: DatasetDeclaration, texts: dict[str, pd.Series], rows: TableRows
) -> None:
    """Refuse an identifier not of the declared form."""
    if declaration.identifier_pattern is None:
        return
    form = re.compile(declaration.identifier_pattern)
    for column, text in texts.items():
        wrong = text.map(lambda v: isinstance(v, str) and form.fullmatch(v) is None)
        if wrong.any():
            words = declaration.identifier_form
            raise rows.error(
                f"{column} must be {words}"
                if words
                else f"{column} is not of the identifiers' declared form ({form.pattern})",
                column,
                wrong.to_numpy(dtype=bool),
            )


def _vocabularies(declaration: DatasetDeclaration) -> dict[str, tuple[str, ...]]:
    return {
        c.name: vocabulary
        for c in declaration.features
        if (vocabulary := c.feature_vocabulary) is not None
    }
