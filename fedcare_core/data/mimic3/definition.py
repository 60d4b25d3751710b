"""What the MIMIC-III cohort is: its 46 features, three objectives, time windows and partition.

Only what is known in the first 24 hours of the ICU stay becomes a feature: demographics,
admission fields, the first care unit and lab and vital-sign aggregates over that window.
"""

from __future__ import annotations

import pandas as pd

from fedcare_core.data.cohort import Objective
from fedcare_core.data.mimic3.items import LAB_ITEMS
from fedcare_core.data.partition import FeaturePartition

__all__ = [
    "AGE_90_PLUS",
    "CATEGORICAL_FEATURES",
    "FEATURE_WINDOW",
    "LAB_COLUMNS",
    "LAB_FEATURES",
    "MIMIC3_FEATURES",
    "MIMIC3_OBJECTIVES",
    "MIMIC3_PARTITION",
    "MIMIC3_VOCABULARIES",
    "NUMERIC_FEATURES",
    "READMISSION_WINDOW",
    "VITAL_COLUMNS",
    "VITAL_FEATURES",
]

#: Window after ICU admission from which features may come.
FEATURE_WINDOW = pd.Timedelta(hours=24)
#: Readmission horizon after hospital discharge.
READMISSION_WINDOW = pd.Timedelta(days=30)
#: Age reported for patients aged 90 or more (MIMIC-III shifts their DOB ~300 years back); 91.4
#: is the median age of that group given in the MIMIC-III documentation.
AGE_90_PLUS = 91.4

# --------------------------------------------------------------------------------------------
# The 46 features and the default partition.
# --------------------------------------------------------------------------------------------

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

#: Declared category lists, from the MIMIC-III v1.4 documentation (ADMISSIONS, PATIENTS,
#: ICUSTAYS): every client encodes a shared feature the same way without seeing others' rows.
MIMIC3_VOCABULARIES: dict[str, tuple[str, ...]] = {
    "gender": ("F", "M"),
    "ethnicity": ("WHITE", "BLACK", "HISPANIC", "ASIAN", "OTHER"),
    "admission_type": ("ELECTIVE", "EMERGENCY", "URGENT", "NEWBORN"),
    "admission_location": (
        "EMERGENCY ROOM ADMIT",
        "TRANSFER FROM HOSP/EXTRAM",
        "CLINIC REFERRAL/PREMATURE",
        "PHYS REFERRAL/NORMAL DELI",
        "TRANSFER FROM SKILLED NUR",
        "TRANSFER FROM OTHER HEALT",
        "HMO REFERRAL/SICK",
        "TRSF WITHIN THIS FACILITY",
        "** INFO NOT AVAILABLE **",
    ),
    "insurance": ("Medicare", "Private", "Medicaid", "Government", "Self Pay"),
    "marital_status": ("MARRIED", "SINGLE", "WIDOWED", "DIVORCED", "SEPARATED", "LIFE PARTNER"),
    "first_careunit": ("MICU", "SICU", "CCU", "TSICU", "CSRU"),
}

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

#: The three objectives, in label-column order.
MIMIC3_OBJECTIVES: tuple[Objective, ...] = (
    Objective(
        "mortality",
        "binary",
        "in-hospital death in the admission holding the ICU stay (HOSPITAL_EXPIRE_FLAG)",
    ),
    Objective(
        "readmission",
        "binary",
        "another hospital admission of the same patient within 30 days after discharge "
        "(survivors only; NaN for in-hospital deaths)",
    ),
    Objective("los", "regression", "ICU length of stay in days (ICUSTAYS.LOS)"),
)

#: Default MIMIC-III partition (paper §V-D): 19 common features and 9 private ones per objective.
#:
#: * Common (19): everything known at ICU admission that every site records — age and the seven
#:   demographic/admission/care-unit categories — plus the mean of the eleven routine labs (basic
#:   metabolic panel and complete blood count), which every hospital measures.
#: * Private pools (9 each = 4 lab extremes/specialised labs + 5 vital-sign aggregates), each
#:   chosen for clinical relevance to its objective so that every pool stays informative even when
#:   CHARTEVENTS is absent and the vitals are all missing:
#:
#:   - mortality: markers of shock and organ failure (lactate max, anion gap, bicarbonate min,
#:     bilirubin; worst GCS, lowest systolic and mean pressure, lowest SpO2, highest heart rate);
#:   - readmission: markers of chronic disease burden (creatinine and BUN max, sodium min,
#:     platelets min; mean heart rate, systolic and diastolic pressure, temperature and SpO2);
#:   - los: markers of infection and metabolic derangement (WBC, glucose and potassium max, mean
#:     lactate; respiratory rate mean and max, highest temperature, lowest heart rate, mean MBP).
MIMIC3_PARTITION = FeaturePartition(
    common=(
        "age",
        "gender",
        "ethnicity",
        "admission_type",
        "admission_location",
        "insurance",
        "marital_status",
        "first_careunit",
        "creatinine_mean",
        "bun_mean",
        "sodium_mean",
        "potassium_mean",
        "chloride_mean",
        "bicarbonate_mean",
        "glucose_mean",
        "hemoglobin_mean",
        "hematocrit_mean",
        "wbc_mean",
        "platelets_mean",
    ),
    private={
        "mortality": (
            "lactate_max",
            "aniongap_mean",
            "bicarbonate_min",
            "bilirubin_mean",
            "gcs_min",
            "sbp_min",
            "mbp_min",
            "spo2_min",
            "hr_max",
        ),
        "readmission": (
            "creatinine_max",
            "bun_max",
            "sodium_min",
            "platelets_min",
            "hr_mean",
            "sbp_mean",
            "dbp_mean",
            "temp_mean",
            "spo2_mean",
        ),
        "los": (
            "wbc_max",
            "glucose_max",
            "potassium_max",
            "lactate_mean",
            "rr_mean",
            "rr_max",
            "temp_max",
            "hr_min",
            "mbp_mean",
        ),
    },
)
