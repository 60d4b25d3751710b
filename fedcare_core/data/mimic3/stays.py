"""The cohort's rows: adult ICU stays joined with their admission and patient.

A stay is kept when its admission and patient rows exist, both ``INTIME`` and ``DOB`` are known
and the patient is at least ``min_age`` at ICU admission.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from fedcare_core.data.mimic3.features import AGE_90_PLUS
from fedcare_core.errors import DataError

__all__ = ["join_stays"]

#: ADMISSIONS columns a stay takes from its admission.
_ADMISSION_COLUMNS = [
    "HADM_ID",
    "HOSPITAL_EXPIRE_FLAG",
    "ADMITTIME",
    "ADMISSION_TYPE",
    "ADMISSION_LOCATION",
    "INSURANCE",
    "MARITAL_STATUS",
    "ETHNICITY",
]
#: Mean Gregorian year in seconds, for ages in years.
_YEAR_S = 365.2425 * 86_400
#: MIMIC-III shifts the DOB of patients aged 90 or more, so any age from 90 up is one of them.
_SHIFTED_AGE = 90


def _join(
    icu: pd.DataFrame, adm: pd.DataFrame, pat: pd.DataFrame
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Every stay with its admission and patient columns; which stays lack either row."""
    # Each stay keeps the data rows it came from (for messages): _ROW (ICUSTAYS), _ADM_ROW,
    # _PAT_ROW.
    admissions = adm[[*_ADMISSION_COLUMNS, "_ROW"]].rename(columns={"_ROW": "_ADM_ROW"})
    stays = icu.merge(admissions, on="HADM_ID", how="left", indicator="_ADM")
    no_adm = (stays["_ADM"] == "left_only").to_numpy()
    patients = pat[["SUBJECT_ID", "GENDER", "DOB", "_ROW"]].rename(columns={"_ROW": "_PAT_ROW"})
    stays = stays.drop(columns="_ADM").merge(
        patients, on="SUBJECT_ID", how="left", indicator="_PAT"
    )
    no_pat = (stays["_PAT"] == "left_only").to_numpy() & ~no_adm
    return stays.drop(columns="_PAT"), no_adm, no_pat


def join_stays(
    icu: pd.DataFrame,
    adm: pd.DataFrame,
    pat: pd.DataFrame,
    *,
    min_age: float,
    root: Path,
) -> tuple[pd.DataFrame, np.ndarray, list[str]]:
    """Join the stays to their admission and patient rows and keep the cohort's stays.

    Parameters
    ----------
    icu
        ICU stays with parsed ``INTIME`` and ``_ROW``, in file order.
    adm
        Admissions with parsed ``ADMITTIME``.
    pat
        Patients with parsed ``DOB``.
    min_age
        Minimum age in years at ICU admission.
    root
        The MIMIC-III directory, for the error message.

    Returns
    -------
    stays, age, notes
        The cohort stays (ICUSTAYS order, fresh index), their age at ICU admission (90 and
        over set to :data:`AGE_90_PLUS`) and notes on the stays excluded and kept.

    Raises
    ------
    DataError
        If no stay meets the criteria.

    """
    stays, no_adm, no_pat = _join(icu, adm, pat)
    no_time = (stays["INTIME"].isna() | stays["DOB"].isna()).to_numpy() & ~no_adm & ~no_pat
    age = (stays["INTIME"] - stays["DOB"]).dt.total_seconds().to_numpy() / _YEAR_S
    n_shifted = int(np.sum(age >= _SHIFTED_AGE))
    age = np.where(age >= _SHIFTED_AGE, AGE_90_PLUS, age)
    minor = ~no_adm & ~no_pat & ~no_time & (age < min_age)
    keep = ~(no_adm | no_pat | no_time | minor)
    notes = [
        f"excluded {int(n)} stays {why}"
        for n, why in (
            (no_adm.sum(), "without an ADMISSIONS row"),
            (no_pat.sum(), "without a PATIENTS row"),
            (no_time.sum(), "with missing INTIME or DOB"),
            (minor.sum(), f"of patients younger than {min_age:g} at ICU admission"),
        )
        if n
    ]
    stays = stays.loc[keep].reset_index(drop=True)
    age = age[keep]
    if len(stays) == 0:
        raise DataError(
            f"no ICU stay in {root} meets the cohort criteria (adults, with admission): of "
            f"{len(keep)} stays, {'; '.join(n.removeprefix('excluded ') for n in notes)}"
        )
    notes.append(
        f"cohort: {len(stays)} ICU stays of {stays['SUBJECT_ID'].nunique()} patients "
        f"({stays['HADM_ID'].nunique()} admissions), age >= {min_age:g}"
    )
    if n_shifted:
        notes.append(
            f"{int(np.sum(age == AGE_90_PLUS))} cohort stays of patients aged 90+ "
            f"(DOB shifted by MIMIC-III) have age set to {AGE_90_PLUS}"
        )
    return stays, age, notes
