"""What ``diabetic_data.csv`` holds: its columns, their types and the values they may take.

The published file (UCI 296, Strack et al. 2014) has 50 columns; ``?`` marks a missing value,
while ``None`` in ``A1Cresult`` and ``max_glu_serum`` is a real category (test not done).
"""

from __future__ import annotations

__all__ = [
    "AGE_BRACKETS",
    "CODE_COLUMNS",
    "COLUMNS_WITH_GAPS",
    "COUNT_RANGES",
    "DIABETES130_CATEGORICAL_FEATURES",
    "DIABETES130_COLUMNS",
    "DIABETES130_COUNT_COLUMNS",
    "DIABETES130_CSV_NAME",
    "DIABETES130_CSV_SHA256",
    "DIABETES130_FEATURES",
    "DIABETES130_NUMERIC_FEATURES",
    "DIABETES130_URL",
    "DIABETES130_VOCABULARIES",
    "DIAG_COLUMNS",
    "EXCLUDED_COLUMNS",
    "EXPIRED_DISCHARGE_IDS",
    "HOSPICE_DISCHARGE_IDS",
    "ICD9_CODE_PATTERN",
    "ICD9_GROUPS",
    "ICD9_RANGES",
    "INTEGER_SOURCE_COLUMNS",
    "MEDICATION_COLUMNS",
    "MEDICATION_LEVELS",
    "NUMERIC_SOURCE_COLUMNS",
    "READMITTED_VALUES",
    "TIME_IN_HOSPITAL_RANGE",
]

#: SHA-256 of the published ``diabetic_data.csv`` (not of any archive holding it).
DIABETES130_CSV_SHA256 = "0689e7ec031237dc63031b938805c48377748761a3b26acab621567afa24df97"

#: Official UCI download (dataset 296, CC BY 4.0).
DIABETES130_URL = (
    "https://archive.ics.uci.edu/static/public/296/"
    "diabetes+130-us+hospitals+for+years+1999-2008.zip"
)

#: The CSV's file name, inside a directory or anywhere inside an archive.
DIABETES130_CSV_NAME = "diabetic_data.csv"

#: The 23 medication columns (values ``No``/``Steady``/``Up``/``Down``).
MEDICATION_COLUMNS: tuple[str, ...] = (
    "metformin",
    "repaglinide",
    "nateglinide",
    "chlorpropamide",
    "glimepiride",
    "acetohexamide",
    "glipizide",
    "glyburide",
    "tolbutamide",
    "pioglitazone",
    "rosiglitazone",
    "acarbose",
    "miglitol",
    "troglitazone",
    "tolazamide",
    "examide",
    "citoglipton",
    "insulin",
    "glyburide-metformin",
    "glipizide-metformin",
    "glimepiride-pioglitazone",
    "metformin-rosiglitazone",
    "metformin-pioglitazone",
)

#: The 50 columns of ``diabetic_data.csv``, in file order.
DIABETES130_COLUMNS: tuple[str, ...] = (
    "encounter_id",
    "patient_nbr",
    "race",
    "gender",
    "age",
    "weight",
    "admission_type_id",
    "discharge_disposition_id",
    "admission_source_id",
    "time_in_hospital",
    "payer_code",
    "medical_specialty",
    "num_lab_procedures",
    "num_procedures",
    "num_medications",
    "number_outpatient",
    "number_emergency",
    "number_inpatient",
    "diag_1",
    "diag_2",
    "diag_3",
    "number_diagnoses",
    "max_glu_serum",
    "A1Cresult",
    *MEDICATION_COLUMNS,
    "change",
    "diabetesMed",
    "readmitted",
)

#: Identifiers and label-source columns: never features.
EXCLUDED_COLUMNS: tuple[str, ...] = (
    "encounter_id",
    "patient_nbr",
    "time_in_hospital",
    "readmitted",
)

#: Integer code columns turned into categorical strings.
CODE_COLUMNS: tuple[str, ...] = (
    "admission_type_id",
    "discharge_disposition_id",
    "admission_source_id",
)

#: Count columns kept as float numeric features.
DIABETES130_COUNT_COLUMNS: tuple[str, ...] = (
    "num_lab_procedures",
    "num_procedures",
    "num_medications",
    "number_outpatient",
    "number_emergency",
    "number_inpatient",
    "number_diagnoses",
)

#: Columns that must hold numbers in the file.
NUMERIC_SOURCE_COLUMNS: tuple[str, ...] = (
    "encounter_id",
    "patient_nbr",
    *CODE_COLUMNS,
    "time_in_hospital",
    *DIABETES130_COUNT_COLUMNS,
)

#: Numeric source columns whose values must be whole numbers (counts included).
INTEGER_SOURCE_COLUMNS: tuple[str, ...] = (
    "encounter_id",
    "patient_nbr",
    *CODE_COLUMNS,
    "time_in_hospital",
    *DIABETES130_COUNT_COLUMNS,
)

#: Clinically plausible range of each count, inclusive. Generous bounds, not the published
#: file's extremes (in brackets): lab tests in a stay of at most 14 days (132), procedures other
#: than lab tests (6), distinct generic medications (81), outpatient, emergency and inpatient
#: visits in the year before the encounter (42, 76, 21: at most one a day) and diagnoses
#: entered (16). A value outside is a corrupted export, not a patient.
COUNT_RANGES: dict[str, tuple[int, int]] = {
    "num_lab_procedures": (0, 500),
    "num_procedures": (0, 50),
    "num_medications": (0, 200),
    "number_outpatient": (0, 365),
    "number_emergency": (0, 365),
    "number_inpatient": (0, 365),
    "number_diagnoses": (0, 50),
}

#: The ten age brackets of the ``age`` column.
AGE_BRACKETS: tuple[str, ...] = tuple(f"[{a}-{a + 10})" for a in range(0, 100, 10))

#: An ICD-9-CM code as the file writes it: a three-digit category 001–999 (leading zeros may
#: be dropped: ``8`` is 008), ``V`` and two digits or ``E`` and three, then up to two decimals
#: (``250.83``, ``V45``, ``E812``).
ICD9_CODE_PATTERN = r"^(?:[1-9]\d{0,2}|0\d{1,2}|V\d{2}|E\d{3})(?:\.\d{1,2})?$"

#: Columns allowed to have missing values (``?``); every other column must be complete, as it
#: is in the published file.
COLUMNS_WITH_GAPS: tuple[str, ...] = (
    "race",
    "weight",
    "payer_code",
    "medical_specialty",
    "diag_1",
    "diag_2",
    "diag_3",
)

DIAG_COLUMNS: tuple[str, ...] = ("diag_1", "diag_2", "diag_3")

#: Numeric features, in file order.
DIABETES130_NUMERIC_FEATURES: tuple[str, ...] = ("age", *DIABETES130_COUNT_COLUMNS)

#: The 46 features, in file order.
DIABETES130_FEATURES: tuple[str, ...] = tuple(
    c for c in DIABETES130_COLUMNS if c not in EXCLUDED_COLUMNS
)

#: Categorical features, in file order.
DIABETES130_CATEGORICAL_FEATURES: tuple[str, ...] = tuple(
    c for c in DIABETES130_FEATURES if c not in DIABETES130_NUMERIC_FEATURES
)

MEDICATION_LEVELS = ("No", "Steady", "Up", "Down")
#: The ICD-9 chapter groups of the diagnoses (the definition's groups of diag_1, diag_2, diag_3).
ICD9_GROUPS = (
    "circulatory",
    "respiratory",
    "digestive",
    "diabetes",
    "injury",
    "musculoskeletal",
    "genitourinary",
    "neoplasms",
    "other",
)

#: Declared category lists from the dataset's documentation (Strack et al. 2014, Table 1, and
#: IDs_mapping.csv), so that every client one-hot encodes a shared feature the same way without
#: looking at anyone's rows. medical_specialty (73 values) is left undeclared: it is a private
#: feature, encoded with each client's own most frequent training values.
DIABETES130_VOCABULARIES: dict[str, tuple[str, ...]] = {
    "race": ("Caucasian", "AfricanAmerican", "Hispanic", "Asian", "Other"),
    "gender": ("Female", "Male", "Unknown/Invalid"),
    "weight": (
        "[0-25)",
        "[25-50)",
        "[50-75)",
        "[75-100)",
        "[100-125)",
        "[125-150)",
        "[150-175)",
        "[175-200)",
        ">200",
    ),
    "admission_type_id": tuple(str(i) for i in range(1, 9)),
    "discharge_disposition_id": tuple(str(i) for i in range(1, 31)),
    "admission_source_id": tuple(str(i) for i in range(1, 27)),
    "payer_code": (
        "MC",
        "MD",
        "HM",
        "UN",
        "BC",
        "SP",
        "CP",
        "SI",
        "DM",
        "CM",
        "CH",
        "PO",
        "WC",
        "OT",
        "OG",
        "MP",
        "FR",
    ),
    "diag_1": ICD9_GROUPS,
    "diag_2": ICD9_GROUPS,
    "diag_3": ICD9_GROUPS,
    "max_glu_serum": ("None", "Norm", ">200", ">300"),
    "A1Cresult": ("None", "Norm", ">7", ">8"),
    "change": ("No", "Ch"),
    "diabetesMed": ("No", "Yes"),
    **{m: MEDICATION_LEVELS for m in MEDICATION_COLUMNS},
}

#: discharge_disposition_id codes meaning the patient died ("Expired ...").
EXPIRED_DISCHARGE_IDS: frozenset[int] = frozenset({11, 19, 20, 21})

#: discharge_disposition_id codes meaning discharge to hospice (home or facility).
HOSPICE_DISCHARGE_IDS: frozenset[int] = frozenset({13, 14})

#: Values of ``readmitted`` the file may hold.
READMITTED_VALUES: tuple[str, ...] = ("NO", "<30", ">30")


#: ``time_in_hospital`` is recorded in whole days, 1 to 14.
TIME_IN_HOSPITAL_RANGE = (1, 14)


#: Strack et al. (2014), Table 2: ICD-9 ranges of the diagnosis groups (on the integer part).
ICD9_RANGES: tuple[tuple[str, tuple[tuple[int, int], ...]], ...] = (
    ("circulatory", ((390, 459), (785, 785))),
    ("respiratory", ((460, 519), (786, 786))),
    ("digestive", ((520, 579), (787, 787))),
    ("diabetes", ((250, 250),)),
    ("injury", ((800, 999),)),
    ("musculoskeletal", ((710, 739),)),
    ("genitourinary", ((580, 629), (788, 788))),
    ("neoplasms", ((140, 239),)),
)
