"""The Diabetes 130-US cohort's objectives and its default feature partition."""

from __future__ import annotations

from fedcare_core.data.cohort import Objective
from fedcare_core.data.partition import FeaturePartition

__all__ = ["DIABETES130_OBJECTIVES", "DIABETES130_PARTITION", "EARLY_DISCHARGE_MAX_DAYS"]

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
