"""Column schemas, item ids and value pools of the synthetic MIMIC-III v1.4 tables.

The schemas are the real release's, column for column; see :mod:`.synthetic` for the tables.
"""

from __future__ import annotations

import pandas as pd

ADMISSIONS_COLUMNS = (
    "ROW_ID",
    "SUBJECT_ID",
    "HADM_ID",
    "ADMITTIME",
    "DISCHTIME",
    "DEATHTIME",
    "ADMISSION_TYPE",
    "ADMISSION_LOCATION",
    "DISCHARGE_LOCATION",
    "INSURANCE",
    "LANGUAGE",
    "RELIGION",
    "MARITAL_STATUS",
    "ETHNICITY",
    "EDREGTIME",
    "EDOUTTIME",
    "DIAGNOSIS",
    "HOSPITAL_EXPIRE_FLAG",
    "HAS_CHARTEVENTS_DATA",
)
PATIENTS_COLUMNS = (
    "ROW_ID",
    "SUBJECT_ID",
    "GENDER",
    "DOB",
    "DOD",
    "DOD_HOSP",
    "DOD_SSN",
    "EXPIRE_FLAG",
)
ICUSTAYS_COLUMNS = (
    "ROW_ID",
    "SUBJECT_ID",
    "HADM_ID",
    "ICUSTAY_ID",
    "DBSOURCE",
    "FIRST_CAREUNIT",
    "LAST_CAREUNIT",
    "FIRST_WARDID",
    "LAST_WARDID",
    "INTIME",
    "OUTTIME",
    "LOS",
)
LABEVENTS_COLUMNS = (
    "ROW_ID",
    "SUBJECT_ID",
    "HADM_ID",
    "ITEMID",
    "CHARTTIME",
    "VALUE",
    "VALUENUM",
    "VALUEUOM",
    "FLAG",
)
CHARTEVENTS_COLUMNS = (
    "ROW_ID",
    "SUBJECT_ID",
    "HADM_ID",
    "ICUSTAY_ID",
    "ITEMID",
    "CHARTTIME",
    "STORETIME",
    "CGID",
    "VALUE",
    "VALUENUM",
    "VALUEUOM",
    "WARNING",
    "ERROR",
    "RESULTSTATUS",
    "STOPPED",
)
SCHEMAS: dict[str, tuple[str, ...]] = {
    "ADMISSIONS": ADMISSIONS_COLUMNS,
    "PATIENTS": PATIENTS_COLUMNS,
    "ICUSTAYS": ICUSTAYS_COLUMNS,
    "LABEVENTS": LABEVENTS_COLUMNS,
    "CHARTEVENTS": CHARTEVENTS_COLUMNS,
}
#: Integer-valued columns (written without a decimal point; empty when missing).
INT_COLUMNS = {
    "ROW_ID",
    "SUBJECT_ID",
    "HADM_ID",
    "ICUSTAY_ID",
    "ITEMID",
    "CGID",
    "FIRST_WARDID",
    "LAST_WARDID",
    "HOSPITAL_EXPIRE_FLAG",
    "HAS_CHARTEVENTS_DATA",
    "EXPIRE_FLAG",
    "WARNING",
    "ERROR",
}

# itemid -> (unit, typical mean, sd)
LAB_ITEMS: dict[int, tuple[str, float, float]] = {
    50912: ("mg/dL", 1.3, 0.6),  # creatinine
    51006: ("mg/dL", 25.0, 10.0),  # BUN
    50983: ("mEq/L", 139.0, 4.0),  # sodium
    50824: ("mEq/L", 138.0, 4.0),  # sodium, whole blood
    50971: ("mEq/L", 4.2, 0.5),  # potassium
    50902: ("mEq/L", 104.0, 5.0),  # chloride
    50882: ("mEq/L", 24.0, 4.0),  # bicarbonate
    50931: ("mg/dL", 130.0, 35.0),  # glucose
    51222: ("g/dL", 10.5, 1.5),  # hemoglobin
    51221: ("%", 31.0, 4.0),  # hematocrit
    51301: ("K/uL", 11.0, 4.0),  # WBC
    51265: ("K/uL", 210.0, 70.0),  # platelets
    50813: ("mmol/L", 2.0, 1.0),  # lactate
    50868: ("mEq/L", 13.0, 3.0),  # anion gap
    50885: ("mg/dL", 1.0, 0.8),  # bilirubin
    50820: ("units", 7.38, 0.05),  # pH: not used by the loader
}
CAREVUE_VITALS: dict[int, tuple[str, float, float]] = {
    211: ("bpm", 88.0, 12.0),
    51: ("mmHg", 120.0, 15.0),
    8368: ("mmHg", 62.0, 9.0),
    52: ("mmHg", 80.0, 10.0),
    618: ("BPM", 18.0, 4.0),
    678: ("?F", 98.6, 1.2),
    646: ("%", 97.0, 1.5),
    198: ("points", 12.0, 2.0),
}
METAVISION_VITALS: dict[int, tuple[str, float, float]] = {
    220045: ("bpm", 88.0, 12.0),
    220179: ("mmHg", 120.0, 15.0),
    220180: ("mmHg", 62.0, 9.0),
    220181: ("mmHg", 80.0, 10.0),
    220210: ("insp/min", 18.0, 4.0),
    223762: ("?C", 37.0, 0.7),
    220277: ("%", 97.0, 1.5),
}
GCS_COMPONENTS = (220739, 223900, 223901)  # eye (1-4), verbal (1-5), motor (1-6)

#: Values drawn for the category columns (realistic spellings, "unknown" markers included).
CAREUNIT_VALUES = ("MICU", "SICU", "CCU", "TSICU", "CSRU")
LOCATION_VALUES = (
    "EMERGENCY ROOM ADMIT",
    "TRANSFER FROM HOSP/EXTRAM",
    "CLINIC REFERRAL/PREMATURE",
    "PHYS REFERRAL/NORMAL DELI",
)
ETHNICITY_VALUES = (
    "WHITE",
    "BLACK/AFRICAN AMERICAN",
    "HISPANIC OR LATINO",
    "ASIAN - CHINESE",
    "UNKNOWN/NOT SPECIFIED",
    "MULTI RACE ETHNICITY",
)
INSURANCE_VALUES = ("Medicare", "Private", "Medicaid", "Government")
MARITAL_VALUES = ("MARRIED", "SINGLE", "WIDOWED", "DIVORCED", None)
ADMISSION_TYPE_VALUES = ("EMERGENCY", "ELECTIVE", "URGENT")


def fmt(t: pd.Timestamp | None) -> str | None:
    """MIMIC-III's date/time text format (``YYYY-MM-DD HH:MM:SS``)."""
    return None if t is None else t.strftime("%Y-%m-%d %H:%M:%S")
