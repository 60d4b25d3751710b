"""The Diabetes 130 feature sets: each feature's time of availability and --features admission."""

from fedcare_core.data.diabetes130 import (
    DIABETES130_ADMISSION_PARTITION,
    DIABETES130_FEATURE_SETS,
    DIABETES130_FEATURE_TIMES,
    DIABETES130_FEATURES,
    DIABETES130_OBJECTIVES,
    DIABETES130_PARTITION,
    DIABETES130_PREDICTION_TIMES,
    MEDICATION_COLUMNS,
)
from fedcare_core.data.partition import check_prediction_times

#: Known only after admission: the stay totals, the discharge disposition, in-stay results.
AFTER_ADMISSION = {
    "num_lab_procedures",
    "num_procedures",
    "num_medications",
    "number_diagnoses",
    "discharge_disposition_id",
    "A1Cresult",
    "max_glu_serum",
    "change",
    "diabetesMed",
    *MEDICATION_COLUMNS,
}


def test_every_feature_and_objective_has_a_time():
    assert set(DIABETES130_FEATURE_TIMES) == set(DIABETES130_FEATURES)
    assert set(DIABETES130_PREDICTION_TIMES) == {o.name for o in DIABETES130_OBJECTIVES}
    assert {f for f, t in DIABETES130_FEATURE_TIMES.items() if t != "admission"} >= AFTER_ADMISSION


def test_the_paper_partition_is_unchanged_and_shows_admission_objectives_stay_totals():
    assert DIABETES130_FEATURE_SETS["paper"] is DIABETES130_PARTITION
    assert len(DIABETES130_PARTITION.common) == 20
    assert {"num_medications", "discharge_disposition_id"} <= set(
        DIABETES130_PARTITION.common + DIABETES130_PARTITION.private_for(["early_discharge"])
    )


def test_admission_objectives_see_only_admission_time_features():
    p = DIABETES130_FEATURE_SETS["admission"]
    assert p is DIABETES130_ADMISSION_PARTITION
    check_prediction_times(p, DIABETES130_FEATURE_TIMES, DIABETES130_PREDICTION_TIMES)
    for objective in ("early_discharge", "los"):
        seen = set(p.common + p.private_for([objective]))
        assert not seen & AFTER_ADMISSION, objective
    assert p.common == (
        "race",
        "gender",
        "age",
        "number_outpatient",
        "number_emergency",
        "number_inpatient",
        "diag_1",
    )
    assert p.private["early_discharge"] == ("admission_type_id", "medical_specialty")
    assert p.private["los"] == ("weight",)


def test_readmission_is_predicted_at_discharge_with_the_disposition_and_stay_features():
    p = DIABETES130_ADMISSION_PARTITION
    readmission = set(p.common + p.private_for(["readmission"]))
    assert "discharge_disposition_id" in readmission
    # Everything readmission saw under the paper's partition, plus the disposition.
    paper = set(DIABETES130_PARTITION.common + DIABETES130_PARTITION.private_for(["readmission"]))
    assert readmission == paper | {"discharge_disposition_id"}
    # What the paper gave early discharge and LOS only (their in-stay pool features) is gone.
    assert not set(p.all_features) & {"num_procedures", "glimepiride", "examide"}
