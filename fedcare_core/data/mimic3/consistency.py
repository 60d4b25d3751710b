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

import pandas as pd

from fedcare_core.errors import DataError

__all__ = [
    "MAX_ICU_LOS_DAYS",
    "SAME_DAY_SLACK",
    "SHIFTED_AGE_GAP",
    "STAY_WINDOW_SLACK",
    "check_admission_times",
    "check_patient_dates",
    "check_stay_links",
    "check_stay_values",
    "check_stay_window",
]

#: How far a discharge may precede its admission and still be read as MIMIC-III's same-day
#: administrative error rather than a corrupted table.
SAME_DAY_SLACK = pd.Timedelta(hours=24)
#: How far outside its hospital admission an ICU stay may begin (ICU care may start in the
#: emergency department hours before the admission is recorded).
STAY_WINDOW_SLACK = pd.Timedelta(days=7)
#: Longest plausible ICU stay (MIMIC-III v1.4's longest is about 173 days).
MAX_ICU_LOS_DAYS = 365.0
#: Ages no MIMIC-III patient can have: real ages end below 90, and MIMIC-III shifts the date of
#: birth of patients aged 90 or more about 300 years back, so their ages start near 300.
SHIFTED_AGE_GAP = (130.0, 280.0)
#: Mean Gregorian year, for ages.
_YEAR = pd.Timedelta(days=365.2425)


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
    count = "({n} stay(s)); the tables do not belong together or one is incomplete"
    _raise_first(icu, list(checks), path, count=count)


def check_stay_values(icu: pd.DataFrame, dob: pd.Series, path: Path) -> None:
    """Refuse impossible ICU stays: LOS, discharge before admission, ages no patient has.

    Parameters
    ----------
    icu
        ICU stays with ``LOS``, parsed ``INTIME`` (and ``OUTTIME`` when the file has it) and
        ``_ROW``.
    dob
        Each stay's patient's parsed ``DOB``, aligned with ``icu``.
    path
        The ICUSTAYS file, for messages.

    Raises
    ------
    DataError
        If ``LOS`` is negative or above :data:`MAX_ICU_LOS_DAYS`, ``OUTTIME`` precedes
        ``INTIME`` by more than :data:`SAME_DAY_SLACK`, ``INTIME`` precedes ``DOB``, or the age
        at ICU admission falls in :data:`SHIFTED_AGE_GAP`.

    """
    los = icu["LOS"]
    intime = icu["INTIME"]
    age = (intime - dob).dt.total_seconds() / _YEAR.total_seconds()
    lo, hi = SHIFTED_AGE_GAP
    checks = [
        (los < 0, "LOS", "LOS (days in the ICU) is negative"),
        (los > MAX_ICU_LOS_DAYS, "LOS", f"LOS (days in the ICU) exceeds {MAX_ICU_LOS_DAYS:g}"),
        (age < 0, "INTIME", "INTIME precedes the patient's date of birth (PATIENTS.DOB)"),
        (
            (age >= lo) & (age < hi),
            "INTIME",
            f"the age at ICU admission (from PATIENTS.DOB) is between {lo:g} and {hi:g} years, "
            "which no MIMIC-III patient has (ages of 90+ are shifted to about 300)",
        ),
    ]
    if "OUTTIME" in icu.columns:
        early = icu["OUTTIME"] < intime - SAME_DAY_SLACK
        checks.append(
            (early, "OUTTIME", f"OUTTIME is more than {_hours(SAME_DAY_SLACK)} before INTIME")
        )
    _raise_first(icu, checks, path)


def check_stay_window(icu: pd.DataFrame, adm: pd.DataFrame, path: Path) -> None:
    """Refuse ICU stays that begin far outside their hospital admission.

    Parameters
    ----------
    icu
        ICU stays with ``HADM_ID``, parsed ``INTIME`` and ``_ROW`` (links already checked).
    adm
        Admissions with parsed ``ADMITTIME`` and ``DISCHTIME``.
    path
        The ICUSTAYS file, for messages.

    Raises
    ------
    DataError
        If ``INTIME`` is more than :data:`STAY_WINDOW_SLACK` before ``ADMITTIME`` or after
        ``DISCHTIME``.

    """
    by_hadm = adm.drop_duplicates("HADM_ID").set_index("HADM_ID")
    admit = icu["HADM_ID"].map(by_hadm["ADMITTIME"])
    discharge = icu["HADM_ID"].map(by_hadm["DISCHTIME"])
    outside = (icu["INTIME"] < admit - STAY_WINDOW_SLACK) | (
        icu["INTIME"] > discharge + STAY_WINDOW_SLACK
    )
    message = (
        f"the ICU stay begins more than {STAY_WINDOW_SLACK.days} days outside its hospital "
        "admission (ADMISSIONS.ADMITTIME to DISCHTIME)"
    )
    _raise_first(icu, [(outside, "INTIME", message)], path)


def check_patient_dates(pat: pd.DataFrame, path: Path) -> None:
    """Refuse a date of death before the date of birth.

    Parameters
    ----------
    pat
        Patients with parsed ``DOB`` (and ``DOD`` when the file has it) and ``_ROW``.
    path
        The PATIENTS file, for messages.

    Raises
    ------
    DataError
        If ``DOD`` precedes ``DOB``.

    """
    if "DOD" in pat.columns:
        _raise_first(pat, [(pat["DOD"] < pat["DOB"], "DOD", "DOD precedes DOB")], path)


def _raise_first(
    rows: pd.DataFrame,
    checks: list[tuple[pd.Series, str, str]],
    path: Path,
    count: str = "in {n} row(s)",
) -> None:
    """Raise a DataError for the first check whose mask holds anywhere (NaN/NaT never hold).

    ``count`` follows the check's message, ``{n}`` standing for the number of rows at fault.
    """
    for mask, column, message in checks:
        bad = mask.fillna(False).to_numpy(dtype=bool)
        if bad.any():
            raise DataError(
                f"{message} {count.format(n=int(bad.sum()))}",
                file=str(path),
                column=column,
                rows=rows.loc[bad, "_ROW"].tolist(),
            )


def _hours(delta: pd.Timedelta) -> str:
    """``24 h`` for a Timedelta of a day."""
    return f"{delta.total_seconds() / 3600:g} h"
