"""Cross-table and cross-column consistency of the MIMIC-III tables the loader reads.

MIMIC-III v1.4 is internally consistent on the points checked here, with one documented
exception: 98 admissions whose ``DISCHTIME`` precedes ``ADMITTIME`` on the same day
(administrative entry errors; MIT-LCP/mimic-code#209). Those are accepted and counted; a
discharge earlier than its admission by more than :data:`SAME_DAY_SLACK` is refused, as are
ICU stays whose admission or patient row is missing or belongs to someone else, negative ICU
lengths of stay and dates of birth after an ICU admission. Messages name the file, the column
and the 1-based data rows, never a value.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from fedcare_core.errors import DataError

__all__ = ["SAME_DAY_SLACK", "check_admission_times", "check_stay_links", "check_stay_values"]

#: How far a discharge may precede its admission and still be read as MIMIC-III's same-day
#: administrative error rather than a corrupted table.
SAME_DAY_SLACK = pd.Timedelta(hours=24)


def check_admission_times(adm: pd.DataFrame, path: Path) -> list[str]:
    """Refuse admissions discharged more than a day before they began; count same-day ones.

    Parameters
    ----------
    adm
        Admissions with parsed ``ADMITTIME`` and ``DISCHTIME`` and ``_ROW``.
    path
        The ADMISSIONS file, for messages.

    Returns
    -------
    list of str
        A note when same-day inversions were accepted.

    Raises
    ------
    DataError
        If a ``DISCHTIME`` precedes its ``ADMITTIME`` by more than :data:`SAME_DAY_SLACK`.

    """
    gap = adm["DISCHTIME"] - adm["ADMITTIME"]
    before = (gap < pd.Timedelta(0)).fillna(False).to_numpy(dtype=bool)
    impossible = (gap < -SAME_DAY_SLACK).fillna(False).to_numpy(dtype=bool)
    if impossible.any():
        raise DataError(
            f"DISCHTIME is more than {_hours(SAME_DAY_SLACK)} before ADMITTIME in "
            f"{int(impossible.sum())} admission(s): a discharge cannot precede its admission",
            file=str(path),
            column="DISCHTIME",
            rows=adm.loc[impossible, "_ROW"].tolist(),
        )
    if before.any():
        return [
            f"ADMISSIONS: {int(before.sum())} admissions discharged earlier the same day than "
            "admitted (MIMIC-III's known administrative entries) kept"
        ]
    return []


def check_stay_links(icu: pd.DataFrame, adm: pd.DataFrame, pat: pd.DataFrame, path: Path) -> None:
    """Refuse ICU stays whose admission or patient is missing or belongs to someone else.

    Parameters
    ----------
    icu
        ICU stays with ``SUBJECT_ID``, ``HADM_ID`` and ``_ROW``.
    adm
        Admissions with ``SUBJECT_ID`` and ``HADM_ID``.
    pat
        Patients with ``SUBJECT_ID``.
    path
        The ICUSTAYS file, for messages.

    Raises
    ------
    DataError
        If a stay's ``HADM_ID`` is not in ADMISSIONS, its ``SUBJECT_ID`` is not in PATIENTS,
        or its admission's ``SUBJECT_ID`` differs from its own.

    """
    owner = icu["HADM_ID"].map(adm.drop_duplicates("HADM_ID").set_index("HADM_ID")["SUBJECT_ID"])
    checks = (
        (owner.isna(), "HADM_ID", "the ICU stay's HADM_ID is not in the ADMISSIONS table"),
        (
            ~icu["SUBJECT_ID"].isin(pat["SUBJECT_ID"]),
            "SUBJECT_ID",
            "the ICU stay's SUBJECT_ID is not in the PATIENTS table",
        ),
        (
            owner.notna() & (owner != icu["SUBJECT_ID"]),
            "SUBJECT_ID",
            "the ICU stay's SUBJECT_ID differs from its admission's (ADMISSIONS.SUBJECT_ID)",
        ),
    )
    for bad, column, message in checks:
        mask = bad.to_numpy(dtype=bool)
        if mask.any():
            raise DataError(
                f"{message} ({int(mask.sum())} stay(s)); the tables do not belong together or "
                "one is incomplete",
                file=str(path),
                column=column,
                rows=icu.loc[mask, "_ROW"].tolist(),
            )


def check_stay_values(icu: pd.DataFrame, dob: pd.Series, path: Path) -> None:
    """Refuse negative ICU lengths of stay and ICU admissions before the patient's birth.

    Parameters
    ----------
    icu
        ICU stays with ``LOS``, parsed ``INTIME`` and ``_ROW``.
    dob
        Each stay's patient's parsed ``DOB``, aligned with ``icu``.
    path
        The ICUSTAYS file, for messages.

    Raises
    ------
    DataError
        If ``LOS`` is negative, or ``INTIME`` precedes ``DOB``.

    """
    negative = (icu["LOS"] < 0).to_numpy(dtype=bool)
    if negative.any():
        raise DataError(
            f"LOS (days in the ICU) is negative in {int(negative.sum())} stay(s)",
            file=str(path),
            column="LOS",
            rows=icu.loc[negative, "_ROW"].tolist(),
        )
    unborn = (icu["INTIME"].to_numpy() < dob.to_numpy()) & icu["INTIME"].notna().to_numpy()
    unborn &= dob.notna().to_numpy()
    if unborn.any():
        raise DataError(
            f"INTIME precedes the patient's date of birth (PATIENTS.DOB) in "
            f"{int(np.sum(unborn))} stay(s)",
            file=str(path),
            column="INTIME",
            rows=icu.loc[unborn, "_ROW"].tolist(),
        )


def _hours(delta: pd.Timedelta) -> str:
    """``24 h`` for a Timedelta of a day."""
    return f"{delta.total_seconds() / 3600:g} h"
