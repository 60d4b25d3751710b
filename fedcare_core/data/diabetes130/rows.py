"""Rows to score: new encounters in the columns of ``diabetic_data.csv``, labels not needed.

A packaged model (:mod:`fedcare_core.predict.package`) turns such rows into the 46 features the
way the loader does (:func:`~fedcare_core.data.diabetes130.features.build_features`), with the
loader's checks on each value, so that a row is encoded exactly as a training row with the same
values was. Label columns (``time_in_hospital``, ``readmitted``), identifiers and any other
column are ignored. Missing values follow the file's conventions: an empty cell, ``?`` or a
pandas missing value is missing, and the encoder imputes it as in training; ``max_glu_serum``
and ``A1Cresult``, which the file never leaves empty, read a missing value as ``None`` (test not
done), since pandas' default CSV reading turns the file's ``None`` into a missing value.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
import pandas as pd

from fedcare_core.data.categories import CategorySource, check_known_categories
from fedcare_core.data.diabetes130.features import build_features
from fedcare_core.data.diabetes130.plausibility import check_age, check_counts, check_diagnoses
from fedcare_core.data.diabetes130.reading import Checker, numeric_column
from fedcare_core.data.diabetes130.schema import (
    CODE_COLUMNS,
    COUNT_RANGES,
    DIABETES130_COUNT_COLUMNS,
    DIABETES130_FEATURES,
    DIABETES130_VOCABULARIES,
    MEDICATION_COLUMNS,
)
from fedcare_core.data.row_values import check_row_columns, text_values

__all__ = [
    "IDENTIFIER_COLUMNS",
    "INTEGER_COLUMNS",
    "LABEL_COLUMNS",
    "ROW_COLUMNS",
    "example_rows",
    "features_from_rows",
]

#: The columns a row to score must have: the features' source columns, in the file's order.
ROW_COLUMNS: tuple[str, ...] = DIABETES130_FEATURES
#: Of those, the whole-number columns (counts and code identifiers; never missing).
INTEGER_COLUMNS: tuple[str, ...] = (*CODE_COLUMNS, *DIABETES130_COUNT_COLUMNS)
#: Identifier columns a scoring output keeps, to join predictions back (never logged).
IDENTIFIER_COLUMNS: tuple[str, ...] = ("encounter_id", "patient_nbr")
#: The file's label sources, ignored when scoring.
LABEL_COLUMNS: tuple[str, ...] = ("time_in_hospital", "readmitted")
#: Columns the file never leaves empty whose ``None`` pandas reads as missing.
_NOT_MEASURED_COLUMNS: tuple[str, ...] = ("max_glu_serum", "A1Cresult")


def features_from_rows(
    frame: pd.DataFrame,
    columns: Sequence[str],
    numeric: Collection[str],
    source: str | None,
    unseen_categories: str,
) -> pd.DataFrame:
    """The features ``columns`` of rows to score, checked as the loader checks a file's rows.

    Parameters
    ----------
    frame
        The rows, with at least ``columns`` (any order; other columns ignored).
    columns
        The features needed (a subset of :data:`ROW_COLUMNS`, each read from the file's column
        of the same name).
    numeric
        Unused: which features are numeric is the file's fact (``age`` is read from brackets).
    source
        What the rows are, for messages (a file name, or ``"the input rows"``).
    unseen_categories
        A value outside a column's documented vocabulary: ``"refuse"`` (an error naming the
        column and rows) or ``"other"`` (encoded in the column's ``other`` indicator).

    Returns
    -------
    pandas.DataFrame
        One row per input row, in order, each feature as
        :func:`~fedcare_core.data.diabetes130.load_diabetes130` builds it.

    Raises
    ------
    DataError
        If a column is missing, or a value cannot be scored: a count or code that is not a
        whole number or is missing (or a count outside its plausible range), an age that is not
        a bracket, a diagnosis that is not an ICD-9-CM code, or (with ``"refuse"``) an unseen
        category. The message names the column and the 1-based rows, never a value.
    """
    check_row_columns(frame, columns, source)
    wanted = [c for c in ROW_COLUMNS if c in set(columns)]
    rows = frame.loc[:, wanted].reset_index(drop=True)
    df = pd.DataFrame(
        {c: rows[c] if c in INTEGER_COLUMNS else text_values(rows[c]) for c in wanted},
        index=rows.index,
    )
    for col in _NOT_MEASURED_COLUMNS:
        if col in df:
            df[col] = df[col].where(df[col].notna(), "None")
    chk = Checker(source, len(df), ends_with_newline=True)
    numbers = {c: numeric_column(df, c, chk) for c in INTEGER_COLUMNS if c in df}
    for col, values in numbers.items():
        if values.isna().any():
            raise chk.error(f"{col} is missing (a whole number is needed)", col, values.isna())
    check_counts({c: numbers[c] for c in COUNT_RANGES if c in numbers}, chk)
    if "age" in df:
        check_age(df, chk)
    check_diagnoses(df, chk)
    features = build_features(df, numbers, chk, wanted)
    numbered = np.arange(1, len(df) + 1)
    check_known_categories(
        features,
        {c: v for c, v in DIABETES130_VOCABULARIES.items() if c in df},
        {c: CategorySource(source, c, numbered) for c in DIABETES130_VOCABULARIES if c in df},
        unseen_categories,
    )
    return features.loc[:, list(columns)]


def example_rows() -> pd.DataFrame:
    """Two synthetic rows to score (never a real encounter): an input example for a model."""
    first: dict[str, object] = {c: DIABETES130_VOCABULARIES[c][0] for c in ("race", "gender")}
    first |= {
        "age": "[70-80)",
        "weight": "?",
        "admission_type_id": 1,
        "discharge_disposition_id": 1,
        "admission_source_id": 7,
        "payer_code": "?",
        "medical_specialty": "?",
        "num_lab_procedures": 40,
        "num_procedures": 1,
        "num_medications": 15,
        "number_outpatient": 0,
        "number_emergency": 0,
        "number_inpatient": 0,
        "diag_1": "428",
        "diag_2": "250.01",
        "diag_3": "V45",
        "number_diagnoses": 7,
        "max_glu_serum": "None",
        "A1Cresult": ">7",
        "change": "No",
        "diabetesMed": "Yes",
    }
    first |= {c: "No" for c in MEDICATION_COLUMNS}
    second = first | {
        "gender": "Male",
        "age": "[50-60)",
        "num_lab_procedures": 60,
        "num_medications": 22,
        "number_inpatient": 2,
        "metformin": "Steady",
        "insulin": "Up",
        "change": "Ch",
    }
    return pd.DataFrame([first, second], columns=list(ROW_COLUMNS))
