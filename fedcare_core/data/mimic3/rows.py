"""Rows to score for MIMIC-III: one row per ICU stay holding the cohort's features.

The loader derives the 46 features from the raw tables (PATIENTS, ADMISSIONS, ICUSTAYS,
LABEVENTS, CHARTEVENTS: :func:`~fedcare_core.data.mimic3.load_mimic3`); a packaged MIMIC-III
model scores that per-stay table — ``age`` in years, the seven categorical features in their
documented groups (``MIMIC3_VOCABULARIES``), the lab and vital-sign aggregates of the first 24
hours, missing where not measured — needing only the columns its client holds. Label and
identifier columns are ignored.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
import pandas as pd

from fedcare_core.data.mimic3.definition import (
    CATEGORICAL_FEATURES,
    MIMIC3_FEATURES,
    MIMIC3_VOCABULARIES,
    NUMERIC_FEATURES,
)
from fedcare_core.data.row_values import feature_rows

__all__ = [
    "IDENTIFIER_COLUMNS",
    "LABEL_COLUMNS",
    "ROW_COLUMNS",
    "example_rows",
    "features_from_rows",
]

#: Every column a row may need: the 46 features, in the cohort's order.
ROW_COLUMNS: tuple[str, ...] = MIMIC3_FEATURES
#: Identifier columns a scoring output keeps, to join predictions back (never logged).
IDENTIFIER_COLUMNS: tuple[str, ...] = ("SUBJECT_ID", "HADM_ID", "ICUSTAY_ID")
#: The cohort's objectives, ignored when scoring.
LABEL_COLUMNS: tuple[str, ...] = ("mortality", "readmission", "los")


def features_from_rows(
    frame: pd.DataFrame,
    columns: Sequence[str],
    numeric: Collection[str],
    source: str | None,
    unseen_categories: str,
) -> pd.DataFrame:
    """The checked features ``columns`` of per-stay rows (see :func:`feature_rows`)."""
    return feature_rows(
        frame,
        columns,
        set(NUMERIC_FEATURES),
        source,
        unseen_categories,
        {c: v for c, v in MIMIC3_VOCABULARIES.items() if c in columns},
    )


def example_rows() -> pd.DataFrame:
    """Two synthetic ICU stays (never a patient's): an input example for a model."""
    first: dict[str, object] = {c: np.nan for c in NUMERIC_FEATURES}
    first |= {c: MIMIC3_VOCABULARIES[c][0] for c in CATEGORICAL_FEATURES}
    first |= {"age": 65.0, "hr_mean": 88.0, "sbp_mean": 120.0, "creatinine_max": 1.1}
    second = first | {"gender": "M", "age": 78.0, "hr_mean": 104.0, "lactate_max": 3.2}
    return pd.DataFrame([first, second], columns=list(ROW_COLUMNS))
