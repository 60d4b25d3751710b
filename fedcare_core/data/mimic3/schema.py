"""The MIMIC-III tables the loader reads: which columns, read as numbers or as text.

Names are upper case, as in the MIMIC-III v1.4 release; the reader matches them against a file's
header case-insensitively. Discharge times (``DISCHTIME``, ``OUTTIME``) and ``DOD`` are read only
for labels and consistency checks, never as features.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ADMISSIONS",
    "CHARTEVENTS",
    "ICUSTAYS",
    "LABEVENTS",
    "MIMIC3_REQUIRED_COLUMNS",
    "PATIENTS",
    "TableSpec",
]


@dataclass(frozen=True)
class TableSpec:
    """Columns read from one MIMIC-III table.

    Parameters
    ----------
    name
        Table name, upper case (``"ICUSTAYS"``).
    numeric
        Columns read as float64 (identifiers, item ids, values, flags).
    text
        Columns read as strings (categories and date/times, parsed later).
    optional
        Columns (from ``numeric`` or ``text``) that may be absent from the file.

    """

    name: str
    numeric: tuple[str, ...]
    text: tuple[str, ...]
    optional: tuple[str, ...] = ()

    @property
    def columns(self) -> tuple[str, ...]:
        """Every column the loader reads, numeric first."""
        return self.numeric + self.text


ADMISSIONS = TableSpec(
    "ADMISSIONS",
    numeric=("SUBJECT_ID", "HADM_ID", "HOSPITAL_EXPIRE_FLAG"),
    text=(
        "ADMITTIME",
        "DISCHTIME",
        "ADMISSION_TYPE",
        "ADMISSION_LOCATION",
        "INSURANCE",
        "MARITAL_STATUS",
        "ETHNICITY",
    ),
)
# DOD and OUTTIME are read for consistency checks only (death after birth, ICU discharge after
# ICU admission); they never become features.
PATIENTS = TableSpec(
    "PATIENTS", numeric=("SUBJECT_ID",), text=("GENDER", "DOB", "DOD"), optional=("DOD",)
)
# LAST_CAREUNIT and the ward ids are read for the benchmark-ihm cohort's transfer rule only.
ICUSTAYS = TableSpec(
    "ICUSTAYS",
    numeric=("SUBJECT_ID", "HADM_ID", "ICUSTAY_ID", "LOS", "FIRST_WARDID", "LAST_WARDID"),
    text=("FIRST_CAREUNIT", "LAST_CAREUNIT", "INTIME", "OUTTIME"),
    optional=("OUTTIME", "LAST_CAREUNIT", "FIRST_WARDID", "LAST_WARDID"),
)
LABEVENTS = TableSpec("LABEVENTS", numeric=("HADM_ID", "ITEMID", "VALUENUM"), text=("CHARTTIME",))
CHARTEVENTS = TableSpec(
    "CHARTEVENTS",
    numeric=("ICUSTAY_ID", "ITEMID", "VALUENUM", "ERROR"),
    text=("CHARTTIME",),
    optional=("ERROR",),
)

#: Columns the loader requires from each always-read table (upper case), for data checks.
MIMIC3_REQUIRED_COLUMNS: dict[str, tuple[str, ...]] = {
    spec.name: tuple(c for c in spec.columns if c not in spec.optional)
    for spec in (ADMISSIONS, PATIENTS, ICUSTAYS, LABEVENTS)
}
