"""Loading a declared dataset: its files read, every column checked, labels derived.

The order is that of a data dictionary's checks: the files and their columns
(:mod:`.reading`), the identifiers (present; the encounter unique), every declared column
(:mod:`.values`), the cohort's rule, then the labels (:mod:`.labels`). The cohort holds the
features only (numbers as float64, categories as strings), the patient key as an integer code
(never written anywhere), the strata column when declared and the sensitive attributes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fedcare_core.data.cohort import Cohort
from fedcare_core.data.declared.checks import condition_columns
from fedcare_core.data.declared.extractors import extract_table
from fedcare_core.data.declared.labels import (
    evaluate,
    label_notes,
    objective_label,
    refuse_empty_cohort,
)
from fedcare_core.data.declared.model import DatasetDeclaration
from fedcare_core.data.declared.reading import (
    RawTable,
    TableRows,
    locate_files,
    read_raw_table,
)
from fedcare_core.data.declared.values import column_values, text_of

__all__ = [
    "IGNORED_COLUMNS_NOTE",
    "check_identifiers",
    "check_rows",
    "check_rules",
    "load_declared",
    "read_table",
]

#: How a cohort's notes begin the list of the file's columns the definition does not declare.
IGNORED_COLUMNS_NOTE = "ignored unexpected column(s): "


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
    patient = check_identifiers(declaration, table.frame, table.rows)
    assert patient is not None  # a source's table holds every identifier (read_raw_table)
    notes: list[str] = []
    values = _typed_columns(declaration, table, unseen_categories, notes)
    check_rules(declaration, values, table.rows)
    keep = np.ones(len(table.frame), dtype=bool)
    if declaration.include is not None:
        keep = evaluate(declaration.include, values) == 1.0
        notes.append(f"cohort rule: {int((~keep).sum()):,} of {len(keep):,} rows left out")
        refuse_empty_cohort(declaration, keep, table.rows)
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
        notes.append(IGNORED_COLUMNS_NOTE + ", ".join(table.ignored))
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
    fields = len(declaration.identifiers) + len(declaration.columns)
    return _checked_columns(declaration, table, order, unseen_categories, notes, fields)


def _checked_columns(
    declaration: DatasetDeclaration,
    table: RawTable,
    names: Iterable[str],
    unseen_categories: str,
    notes: list[str],
    fields: int = 0,
) -> dict[str, pd.Series]:
    """The named columns checked and typed, in that order (a run's and a model's one path)."""
    return {
        name: column_values(
            table.frame[name],
            declaration.columns[name],
            table.rows,
            unseen_categories,
            notes,
            missing_message=declaration.gap_message(name),
            fields=fields,
        )
        for name in names
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


def check_rows(
    declaration: DatasetDeclaration,
    table: RawTable,
    columns: Sequence[str],
    unseen_categories: str,
) -> None:
    """A run's checks of its rows, over rows holding the identifiers and ``columns`` only.

    What :func:`load_declared` refuses in a source file, refused in rows to score (``fedcare
    predict``'s): a missing identifier, one not of the declared form, a repeated encounter;
    each column's values as declared, a gap where its definition allows none; and every rule
    (``refuse``) over these columns only (a rule over a label cannot be told without it).

    Parameters
    ----------
    declaration
        The checked definition.
    table
        The rows as :func:`~.reading.read_raw_table` reads them.
    columns
        The declared columns to check (a model's inputs).
    unseen_categories
        ``"refuse"`` or ``"other"``: a category outside its declared vocabulary.

    Raises
    ------
    DataError
        Naming the file, the column and the rows at fault.
    """
    check_identifiers(declaration, table.frame, table.rows)
    notes: list[str] = []
    values = _checked_columns(declaration, table, columns, unseen_categories, notes)
    check_rules(declaration, values, table.rows)


def check_rules(
    declaration: DatasetDeclaration, values: Mapping[str, pd.Series], rows: TableRows
) -> None:
    """Refuse rows no real record can be (the definition's ``refuse`` rules).

    A rule reading a column absent from ``values`` (a label, in rows to score) is not
    applied.

    Raises
    ------
    DataError
        The first broken rule's message, naming its column and rows.
    """
    for rule in declaration.rules:
        if not set(condition_columns(rule.when)) <= set(values):
            continue
        broken = evaluate(rule.when, values) == 1.0
        if broken.any():
            raise rows.error(rule.message, rule.column, broken)


def check_identifiers(
    declaration: DatasetDeclaration, frame: pd.DataFrame, rows: TableRows
) -> np.ndarray | None:
    """The patient key per row (text); refuse a missing identifier, or a repeated encounter.

    Parameters
    ----------
    declaration
        The checked definition.
    frame
        The rows; the identifier columns it holds are checked (a run's table holds them all;
        rows to score may hold none).
    rows
        Where each row came from (messages).

    Returns
    -------
    ndarray or None
        The patient key of each row (None: ``frame`` lacks the patient column).

    Raises
    ------
    DataError
        Naming the identifier column and the rows: a missing value, a value not of the
        declared form, an encounter on several rows.
    """
    texts = {c: text_of(frame[c]) for c in declaration.identifiers if c in frame.columns}
    for column, text in texts.items():
        if text.isna().any():
            raise rows.error(declaration.gap_message(column), column, text.isna().to_numpy())
    _check_identifier_form(declaration, texts, rows)
    if declaration.encounter is not None and declaration.encounter in texts:
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
    patient = texts.get(declaration.patient)
    return None if patient is None else patient.to_numpy(dtype=object)


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
