"""The Diabetes 130-US cohort's objectives and its default feature partition."""

from __future__ import annotations

from fedcare_core.data.cohort import Objective
from fedcare_core.data.diabetes130.schema import MEDICATION_COLUMNS
from fedcare_core.data.partition import FeaturePartition, at_prediction_time

__all__ = [
    "DIABETES130_ADMISSION_PARTITION",
    "DIABETES130_FEATURE_SETS",
    "DIABETES130_FEATURE_TIMES",
    "DIABETES130_OBJECTIVES",
    "DIABETES130_PARTITION",
    "DIABETES130_PREDICTION_TIMES",
    "EARLY_DISCHARGE_MAX_DAYS",
]

#: Early discharge threshold: a stay of at most this many days.
EARLY_DISCHARGE_MAX_DAYS = 3

DIABETES130_OBJECTIVES: tuple[Objective, ...] = (
    Objective(
        "early_discharge",
        "binary",
        f"time_in_hospital <= {EARLY_DISCHARGE_MAX_DAYS} days",
    ),
    Objective(
        "readmission",
        "binary",
        "readmitted within 30 days ('<30'; 'any' option: readmitted != 'NO'); "
        "expired and hospice discharges excluded",
    ),
    Objective("los", "regression", "time_in_hospital in days"),
)

# Default feature partition. It mirrors the paper's split of the 46 Diabetes 130-US features into
# 20 common features and private pools of 9 / 9 / 8 for early discharge / readmission / length of
# stay (Definition 3, §V-D). The common set holds demographics, utilisation counts, the principal
# diagnosis, glycaemic tests and the most prescribed drugs. The five near-constant medication
# columns (examide, citoglipton, glimepiride-pioglitazone, metformin-rosiglitazone,
# metformin-pioglitazone: almost every value is "No") sit in the LOS pool, as the paper's note
# on "five low-variance features" suggests.
DIABETES130_PARTITION = FeaturePartition(
    common=(
        "race",
        "gender",
        "age",
        "num_lab_procedures",
        "num_medications",
        "number_outpatient",
        "number_emergency",
        "number_inpatient",
        "number_diagnoses",
        "diag_1",
        "A1Cresult",
        "max_glu_serum",
        "change",
        "diabetesMed",
        "metformin",
        "insulin",
        "glipizide",
        "glyburide",
        "pioglitazone",
        "rosiglitazone",
    ),
    private={
        "early_discharge": (
            "admission_type_id",
            "discharge_disposition_id",
            "medical_specialty",
            "glimepiride",
            "repaglinide",
            "nateglinide",
            "chlorpropamide",
            "acetohexamide",
            "tolbutamide",
        ),
        "readmission": (
            "admission_source_id",
            "payer_code",
            "diag_2",
            "diag_3",
            "acarbose",
            "miglitol",
            "troglitazone",
            "tolazamide",
            "glyburide-metformin",
        ),
        "los": (
            "num_procedures",
            "weight",
            "examide",
            "citoglipton",
            "glipizide-metformin",
            "glimepiride-pioglitazone",
            "metformin-rosiglitazone",
            "metformin-pioglitazone",
        ),
    },
    # Undeclared vocabulary (each client encodes its own top values): never shared.
    private_only=("medical_specialty",),
)

#: When each feature's value is known (:data:`fedcare_core.data.partition.AVAILABILITY`), from
#: the data set's documentation (Strack et al. 2014, Table 1):
#:
#: * admission: demographics, the admission type and source, the payer, the admitting
#:   physician's specialty, weight, the prior year's outpatient, emergency and inpatient visit
#:   counts, and the principal diagnosis (``diag_1``: the condition chiefly responsible for the
#:   admission, known at admission as the admitting diagnosis; a judgment call, documented in
#:   DESIGN.md);
#: * stay: totals over the encounter (lab tests, procedures, medications, diagnoses entered),
#:   the secondary diagnoses, the glucose and HbA1c results, and every medication column (each
#:   says whether the drug was prescribed or its dose changed *during the encounter*), ``change``
#:   and ``diabetesMed``;
#: * discharge: the discharge disposition.
DIABETES130_FEATURE_TIMES: dict[str, str] = {
    **dict.fromkeys(
        (
            "race",
            "gender",
            "age",
            "weight",
            "admission_type_id",
            "admission_source_id",
            "payer_code",
            "medical_specialty",
            "number_outpatient",
            "number_emergency",
            "number_inpatient",
            "diag_1",
        ),
        "admission",
    ),
    **dict.fromkeys(
        (
            "num_lab_procedures",
            "num_procedures",
            "num_medications",
            "number_diagnoses",
            "diag_2",
            "diag_3",
            "max_glu_serum",
            "A1Cresult",
            *MEDICATION_COLUMNS,
            "change",
            "diabetesMed",
        ),
        "stay",
    ),
    "discharge_disposition_id": "discharge",
}

#: When each objective is predicted: early discharge and LOS at admission (to plan the stay),
#: readmission at discharge (to plan follow-up).
DIABETES130_PREDICTION_TIMES: dict[str, str] = {
    "early_discharge": "admission",
    "readmission": "discharge",
    "los": "admission",
}

#: ``--features admission``: the paper's partition with every objective seeing only what is
#: known when it is predicted (:func:`~fedcare_core.data.partition.at_prediction_time`). The
#: common set keeps the seven admission-time features; the thirteen stay-time common features
#: join readmission's pool; early discharge keeps admission type and specialty, LOS weight;
#: the discharge disposition (in early discharge's pool in the paper) moves to readmission's.
DIABETES130_ADMISSION_PARTITION = at_prediction_time(
    DIABETES130_PARTITION,
    DIABETES130_FEATURE_TIMES,
    DIABETES130_PREDICTION_TIMES,
    moves={"readmission": ("discharge_disposition_id",)},
)

#: ``--features`` → partition.
DIABETES130_FEATURE_SETS: dict[str, FeaturePartition] = {
    "paper": DIABETES130_PARTITION,
    "admission": DIABETES130_ADMISSION_PARTITION,
}
