"""Loader for the Diabetes 130-US Hospitals data set (UCI 296, Strack et al. 2014).

The loader reads ``diabetic_data.csv`` (plain, or streamed from a ``.zip`` without extracting it),
checks its SHA-256 and its contents, and returns a :class:`~fedcare_core.data.cohort.Cohort` with
three objectives: ``early_discharge`` (binary), ``readmission`` (binary) and ``los``
(regression, days). Every problem with the input file is a :class:`~fedcare_core.errors.DataError`
(or its subclass :class:`~fedcare_core.errors.ChecksumError`), never a traceback.

The file's definition (``fedcare_core/data/definitions/diabetes130.yaml``) is what the loader
reads it by (:mod:`.loader`, the loader every dataset defined by a file takes); :mod:`.schema`
and :mod:`.definition` name its columns, value sets, objectives and partitions for the code that
refers to them (the download, the example rows, tests), and :mod:`.source` finds the file
(plain, or in an archive). The raw file's Great Expectations suite is generated from the
definition too (:mod:`data_checks.declared`).
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
from fedcare_core.data.diabetes130.loader import load_diabetes130
from fedcare_core.data.diabetes130.schema import (
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
    ICD9_GROUPS,
    MEDICATION_COLUMNS,
)
from fedcare_core.data.diabetes130.source import find_csv_member, find_diabetes130

__all__ = [
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
    "ICD9_GROUPS",
    "MEDICATION_COLUMNS",
    "find_csv_member",
    "find_diabetes130",
    "load_diabetes130",
]
