"""Assertions and lookups shared by the MIMIC-III loader's tests."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fedcare_core.data.cohort import Cohort
from fedcare_core.data.mimic3 import NUMERIC_FEATURES

VITALS = [c for c in NUMERIC_FEATURES if c.split("_")[0] in {"hr", "sbp", "dbp", "mbp", "rr"}]
VITALS += [c for c in NUMERIC_FEATURES if c.split("_")[0] in {"temp", "spo2", "gcs"}]
ID_WORDS = ("subject", "hadm", "icustay", "row_id", "itemid")


def assert_same_cohort(a: Cohort, b: Cohort) -> None:
    pd.testing.assert_frame_equal(a.features, b.features, check_exact=True)
    pd.testing.assert_frame_equal(a.labels, b.labels, check_exact=True)
    np.testing.assert_array_equal(a.patient, b.patient)
    assert a.strata is not None and b.strata is not None
    pd.testing.assert_series_equal(a.strata, b.strata)


def row_of(cohort: Cohort, tables: dict[str, pd.DataFrame], icustay: int) -> int:
    """Cohort row of an ICU stay (the loader keeps ICUSTAYS order, minus excluded stays)."""
    kept = tables["ICUSTAYS"]["SUBJECT_ID"] != 1000  # patient 0 is a minor
    ids = tables["ICUSTAYS"].loc[kept, "ICUSTAY_ID"].tolist()
    assert len(ids) == cohort.n_rows
    return ids.index(icustay)
