"""A tiny synthetic cohort with learnable signal, for fast unit tests."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fedcare_core.data.cohort import Cohort, Objective
from fedcare_core.data.partition import FeaturePartition

OBJECTIVES = (
    Objective("early_discharge", "binary"),
    Objective("readmission", "binary"),
    Objective("los", "regression"),
)

PARTITION = FeaturePartition(
    common=("age", "n_meds", "n_labs", "sex", "insulin"),
    private={
        "early_discharge": ("adm_type", "n_proc"),
        "readmission": ("n_inpatient", "specialty"),
        "los": ("n_diag", "weight"),
    },
)


def make_cohort(n_patients: int = 300, seed: int = 0, rows_per_patient: int = 2) -> Cohort:
    """Synthetic encounters: LOS depends on common and private features, labels follow."""
    rng = np.random.default_rng(seed)
    n = n_patients * rows_per_patient
    patient = np.repeat(np.arange(n_patients), rows_per_patient)
    age = rng.uniform(20, 90, n)
    n_meds = rng.poisson(12, n).astype(float)
    n_labs = rng.poisson(40, n).astype(float)
    n_proc = rng.poisson(1.5, n).astype(float)
    n_inp = rng.poisson(0.6, n).astype(float)
    n_diag = rng.integers(1, 10, n).astype(float)
    weight = np.where(rng.random(n) < 0.3, np.nan, rng.normal(80, 15, n))
    sex = pd.Categorical(rng.choice(["F", "M"], n), categories=["F", "M"])
    insulin = pd.Categorical(
        rng.choice(["No", "Steady", "Up", "Down"], n), categories=["No", "Steady", "Up", "Down"]
    )
    adm_type = rng.choice(["1", "2", "3"], n).astype(object)
    specialty = rng.choice(["Cardiology", "Surgery", "InternalMedicine", "Other"], n).astype(object)
    specialty[rng.random(n) < 0.2] = None
    log_los = (
        0.6
        + 0.03 * n_meds
        + 0.004 * n_labs
        + 0.15 * n_proc
        + 0.05 * n_diag
        + 0.2 * (adm_type == "1")
        + rng.normal(0, 0.25, n)
    )
    los = np.clip(np.round(np.expm1(log_los)), 1, 14)
    readm_logit = -2.0 + 0.9 * n_inp + 0.01 * (age - 50) + 0.4 * (specialty == "Surgery")
    readm = (rng.random(n) < 1 / (1 + np.exp(-readm_logit))).astype(float)
    readm[rng.random(n) < 0.03] = np.nan
    features = pd.DataFrame(
        {
            "age": age,
            "n_meds": n_meds,
            "n_labs": n_labs,
            "sex": sex,
            "insulin": insulin,
            "adm_type": adm_type,
            "n_proc": n_proc,
            "n_inpatient": n_inp,
            "specialty": specialty,
            "n_diag": n_diag,
            "weight": weight,
        }
    )
    labels = pd.DataFrame(
        {
            "early_discharge": (los <= 3).astype(float),
            "readmission": readm,
            "los": los,
        }
    )
    return Cohort(
        dataset="synthetic",
        features=features,
        numeric_features=("age", "n_meds", "n_labs", "n_proc", "n_inpatient", "n_diag", "weight"),
        categorical_features=("sex", "insulin", "adm_type", "specialty"),
        labels=labels,
        objectives=OBJECTIVES,
        patient=patient,
        strata=pd.Series(adm_type.astype(str)),
        source_sha256="0" * 64,
    )
