"""What the MIMIC-III labels read besides the stay's own row: the patient's next admission.

The labels themselves are declared in ``fedcare_core/data/definitions/mimic3.yaml``: mortality is
``HOSPITAL_EXPIRE_FLAG``, 30-day readmission is a next admission within 30 days of discharge
(survivors only), length of stay is ``ICUSTAYS.LOS``. A readmission need not hold an ICU stay,
so the days to the next admission come from every admission, not only the cohort's.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["days_to_next_admission"]

_DAY_S = 86_400.0


def days_to_next_admission(adm: pd.DataFrame, hadm: np.ndarray) -> np.ndarray:
    """Days from each admission's ``DISCHTIME`` to the patient's next ``ADMITTIME`` at or after it.

    Parameters
    ----------
    adm
        Every admission (``SUBJECT_ID``, ``HADM_ID``, ``ADMITTIME``, ``DISCHTIME``).
    hadm
        The admission of each cohort stay.

    Returns
    -------
    numpy.ndarray
        Float days aligned with ``hadm``; NaN where the patient has no other admission at or
        after the discharge (or the discharge time is missing).
    """
    base = adm.loc[adm["HADM_ID"].isin(hadm), ["SUBJECT_ID", "HADM_ID", "DISCHTIME"]]
    others = adm.loc[
        adm["SUBJECT_ID"].isin(base["SUBJECT_ID"]), ["SUBJECT_ID", "HADM_ID", "ADMITTIME"]
    ]
    pairs = base.merge(others, on="SUBJECT_ID", suffixes=("", "_NEXT"))
    gap = pairs["ADMITTIME"] - pairs["DISCHTIME"]
    later = (pairs["HADM_ID_NEXT"] != pairs["HADM_ID"]) & (gap >= pd.Timedelta(0))
    nearest = gap[later].groupby(pairs.loc[later, "HADM_ID"]).min()
    days = (nearest.dt.total_seconds() / _DAY_S).reindex(hadm)
    return days.to_numpy(dtype=np.float64)
