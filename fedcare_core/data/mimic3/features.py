"""The 46 features the MIMIC-III extractor builds, and their time window.

Only what is known in the first 24 hours of the ICU stay becomes a feature: demographics,
admission fields, the first care unit and lab and vital-sign aggregates over that window. Their
vocabularies, ranges, the objectives and the partition are declared in
``fedcare_core/data/definitions/mimic3.yaml`` (:mod:`.definition`).
"""

from __future__ import annotations

import pandas as pd

from fedcare_core.data.mimic3.items import LAB_ITEMS

__all__ = [
    "AGE_90_PLUS",
    "CATEGORICAL_FEATURES",
    "FEATURE_WINDOW",
    "LAB_COLUMNS",
    "LAB_FEATURES",
    "MIMIC3_FEATURES",
    "NUMERIC_FEATURES",
    "VITAL_COLUMNS",
    "VITAL_FEATURES",
]

#: Window after ICU admission from which features may come.
FEATURE_WINDOW = pd.Timedelta(hours=24)
#: Age reported for patients aged 90 or more (MIMIC-III shifts their DOB ~300 years back); 91.4
#: is the median age of that group given in the MIMIC-III documentation.
AGE_90_PLUS = 91.4


#: Categorical features (strings, NaN = missing).
CATEGORICAL_FEATURES: tuple[str, ...] = (
    "gender",
    "ethnicity",
    "admission_type",
    "admission_location",
    "insurance",
    "marital_status",
    "first_careunit",
)

#: Lab aggregates: (lab, aggregate) in feature order; the feature is ``f"{lab}_{agg}"``.
LAB_FEATURES: tuple[tuple[str, str], ...] = (
    *((lab, "mean") for lab in LAB_ITEMS),
    ("creatinine", "max"),
    ("bun", "max"),
    ("sodium", "min"),
    ("potassium", "max"),
    ("bicarbonate", "min"),
    ("glucose", "max"),
    ("wbc", "max"),
    ("platelets", "min"),
    ("lactate", "max"),
)

#: Vital-sign aggregates: (vital, aggregate) in feature order.
VITAL_FEATURES: tuple[tuple[str, str], ...] = (
    ("hr", "mean"),
    ("hr", "min"),
    ("hr", "max"),
    ("sbp", "mean"),
    ("sbp", "min"),
    ("dbp", "mean"),
    ("mbp", "mean"),
    ("mbp", "min"),
    ("rr", "mean"),
    ("rr", "max"),
    ("temp", "mean"),
    ("temp", "max"),
    ("spo2", "mean"),
    ("spo2", "min"),
    ("gcs", "min"),
)

LAB_COLUMNS = tuple(f"{v}_{a}" for v, a in LAB_FEATURES)
VITAL_COLUMNS = tuple(f"{v}_{a}" for v, a in VITAL_FEATURES)

#: Numeric features (float, NaN = missing): age, 23 lab and 15 vital-sign aggregates.
NUMERIC_FEATURES: tuple[str, ...] = ("age", *LAB_COLUMNS, *VITAL_COLUMNS)
#: All 46 features, in the column order of :attr:`Cohort.features`.
MIMIC3_FEATURES: tuple[str, ...] = (
    "age",
    *CATEGORICAL_FEATURES,
    *LAB_COLUMNS,
    *VITAL_COLUMNS,
)
