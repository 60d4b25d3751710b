"""Loader for the Diabetes 130-US Hospitals data set (UCI 296, Strack et al. 2014).

The loader reads ``diabetic_data.csv`` (plain, or streamed from a ``.zip`` without extracting it),
checks its SHA-256 and its contents, and returns a :class:`~fedcare_core.data.cohort.Cohort` with
three objectives: ``early_discharge`` (binary), ``readmission`` (binary) and ``los``
(regression, days). Every problem with the input file is a :class:`~fedcare_core.errors.DataError`
(or its subclass :class:`~fedcare_core.errors.ChecksumError`), never a traceback.

The package is split by concern: :mod:`.schema` (the file's columns and value sets),
:mod:`.definition` (objectives and the default partition), :mod:`.source` (finding the file,
reading an archive), :mod:`.reading` (parsing and checks), :mod:`.labels` and :mod:`.features`
(label and feature assembly) and :mod:`.loader` (:func:`load_diabetes130`).
"""

from fedcare_core.data.diabetes130.definition import (
    DIABETES130_ADMISSION_PARTITION,
    DIABETES130_FEATURE_SETS,
    DIABETES130_FEATURE_TIMES,
    DIABETES130_OBJECTIVES,
    DIABETES130_PARTITION,
    DIABETES130_PREDICTION_TIMES,
    EARLY_DISCHARGE_MAX_DAYS,
)
from fedcare_core.data.diabetes130.features import icd9_group
from fedcare_core.data.diabetes130.loader import load_diabetes130
from fedcare_core.data.diabetes130.schema import (
    AGE_BRACKETS,
    COLUMNS_WITH_GAPS,
    COUNT_RANGES,
    DIABETES130_CATEGORICAL_FEATURES,
    DIABETES130_COLUMNS,
    DIABETES130_COUNT_COLUMNS,
    DIABETES130_CSV_NAME,
    DIABETES130_CSV_SHA256,
    DIABETES130_FEATURES,
    DIABETES130_NUMERIC_FEATURES,
    DIABETES130_URL,
    DIABETES130_VOCABULARIES,
    EXCLUDED_COLUMNS,
    EXPIRED_DISCHARGE_IDS,
    HOSPICE_DISCHARGE_IDS,
    ICD9_CODE_PATTERN,
    ICD9_GROUPS,
    MEDICATION_COLUMNS,
    READMITTED_VALUES,
    TIME_IN_HOSPITAL_RANGE,
)
from fedcare_core.data.diabetes130.source import find_csv_member, find_diabetes130

__all__ = [
    "AGE_BRACKETS",
    "COLUMNS_WITH_GAPS",
    "COUNT_RANGES",
    "DIABETES130_ADMISSION_PARTITION",
    "DIABETES130_CATEGORICAL_FEATURES",
    "DIABETES130_COLUMNS",
    "DIABETES130_COUNT_COLUMNS",
    "DIABETES130_CSV_NAME",
    "DIABETES130_CSV_SHA256",
    "DIABETES130_FEATURES",
    "DIABETES130_FEATURE_SETS",
    "DIABETES130_FEATURE_TIMES",
    "DIABETES130_NUMERIC_FEATURES",
    "DIABETES130_OBJECTIVES",
    "DIABETES130_PARTITION",
    "DIABETES130_PREDICTION_TIMES",
    "DIABETES130_URL",
    "DIABETES130_VOCABULARIES",
    "EARLY_DISCHARGE_MAX_DAYS",
    "EXCLUDED_COLUMNS",
    "EXPIRED_DISCHARGE_IDS",
    "HOSPICE_DISCHARGE_IDS",
    "ICD9_CODE_PATTERN",
    "ICD9_GROUPS",
    "MEDICATION_COLUMNS",
    "READMITTED_VALUES",
    "TIME_IN_HOSPITAL_RANGE",
    "find_csv_member",
    "find_diabetes130",
    "icd9_group",
    "load_diabetes130",
]
