"""Loader for the Diabetes 130-US Hospitals data set (UCI 296, Strack et al. 2014).

The loader reads ``diabetic_data.csv`` (plain, or streamed from a ``.zip`` without extracting it),
checks its SHA-256 and its contents, and returns a :class:`~fedcare_core.data.cohort.Cohort` with
three objectives: ``early_discharge`` (binary), ``readmission`` (binary) and ``los``
(regression, days). Every problem with the input file is a :class:`~fedcare_core.errors.DataError`
(or its subclass :class:`~fedcare_core.errors.ChecksumError`), never a traceback.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
import zlib
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from fedcare_core.data.cohort import Cohort, Objective
from fedcare_core.data.partition import FeaturePartition
from fedcare_core.errors import ChecksumError, ConfigError, DataError

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
_CODE_COLUMNS: tuple[str, ...] = (
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
_NUMERIC_SOURCE_COLUMNS: tuple[str, ...] = (
    "encounter_id",
    "patient_nbr",
    *_CODE_COLUMNS,
    "time_in_hospital",
    *DIABETES130_COUNT_COLUMNS,
)

#: Numeric source columns whose values must be whole numbers.
_INTEGER_SOURCE_COLUMNS: tuple[str, ...] = (
    "encounter_id",
    "patient_nbr",
    *_CODE_COLUMNS,
    "time_in_hospital",
)

_DIAG_COLUMNS: tuple[str, ...] = ("diag_1", "diag_2", "diag_3")

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

_MEDICATION_LEVELS = ("No", "Steady", "Up", "Down")
#: Diagnosis groups produced by :func:`icd9_group`.
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
    **{m: _MEDICATION_LEVELS for m in MEDICATION_COLUMNS},
}

#: discharge_disposition_id codes meaning the patient died ("Expired ...").
EXPIRED_DISCHARGE_IDS: frozenset[int] = frozenset({11, 19, 20, 21})

#: discharge_disposition_id codes meaning discharge to hospice (home or facility).
HOSPICE_DISCHARGE_IDS: frozenset[int] = frozenset({13, 14})

#: Values of ``readmitted`` the file may hold.
READMITTED_VALUES: tuple[str, ...] = ("NO", "<30", ">30")

#: Early discharge threshold: a stay of at most this many days.
EARLY_DISCHARGE_MAX_DAYS = 3

#: ``time_in_hospital`` is recorded in whole days, 1 to 14.
TIME_IN_HOSPITAL_RANGE = (1, 14)

DIABETES130_OBJECTIVES: tuple[Objective, ...] = (
    Objective(
        "early_discharge",
        "binary",
        f"time_in_hospital <= {EARLY_DISCHARGE_MAX_DAYS} days",
    ),
    Objective(
        "readmission",
        "binary",
        "readmitted within 30 days ('<30'; 'any' option: readmitted != 'NO'); "
        "expired and hospice discharges excluded",
    ),
    Objective("los", "regression", "time_in_hospital in days"),
)

# Default feature partition. It mirrors the paper's split of the 46 Diabetes 130-US features into
# 20 common features and private pools of 9 / 9 / 8 for early discharge / readmission / length of
# stay (Definition 3, §V-D). The common set holds demographics, utilisation counts, the principal
# diagnosis, glycaemic tests and the most prescribed drugs. The five near-constant medication
# columns (examide, citoglipton, glimepiride-pioglitazone, metformin-rosiglitazone,
# metformin-pioglitazone: almost every value is "No") sit in the LOS pool, as the paper's note
# on "five low-variance features" suggests.
DIABETES130_PARTITION = FeaturePartition(
    common=(
        "race",
        "gender",
        "age",
        "num_lab_procedures",
        "num_medications",
        "number_outpatient",
        "number_emergency",
        "number_inpatient",
        "number_diagnoses",
        "diag_1",
        "A1Cresult",
        "max_glu_serum",
        "change",
        "diabetesMed",
        "metformin",
        "insulin",
        "glipizide",
        "glyburide",
        "pioglitazone",
        "rosiglitazone",
    ),
    private={
        "early_discharge": (
            "admission_type_id",
            "discharge_disposition_id",
            "medical_specialty",
            "glimepiride",
            "repaglinide",
            "nateglinide",
            "chlorpropamide",
            "acetohexamide",
            "tolbutamide",
        ),
        "readmission": (
            "admission_source_id",
            "payer_code",
            "diag_2",
            "diag_3",
            "acarbose",
            "miglitol",
            "troglitazone",
            "tolazamide",
            "glyburide-metformin",
        ),
        "los": (
            "num_procedures",
            "weight",
            "examide",
            "citoglipton",
            "glipizide-metformin",
            "glimepiride-pioglitazone",
            "metformin-rosiglitazone",
            "metformin-pioglitazone",
        ),
    },
    # Undeclared vocabulary (each client encodes its own top values): never shared.
    private_only=("medical_specialty",),
)


# --------------------------------------------------------------------------------------------
# Locating the file
# --------------------------------------------------------------------------------------------


def find_csv_member(zip_path: str | Path) -> str | None:
    """Name the archive member whose basename is ``diabetic_data.csv``.

    Parameters
    ----------
    zip_path
        A ``.zip`` archive.

    Returns
    -------
    str or None
        The member's name (the shallowest, then alphabetically first, if several match), or
        ``None`` if there is none.

    Raises
    ------
    zipfile.BadZipFile, OSError
        If the archive cannot be read.

    """
    with zipfile.ZipFile(zip_path) as zf:
        names = [
            n
            for n in zf.namelist()
            if not n.endswith("/")
            and n.replace("\\", "/").rsplit("/", 1)[-1] == DIABETES130_CSV_NAME
        ]
    if not names:
        return None
    return min(names, key=lambda n: (n.count("/"), n))


def _zip_holds_csv(zip_path: Path) -> bool:
    try:
        return find_csv_member(zip_path) is not None
    except (zipfile.BadZipFile, OSError, EOFError):
        return False


def _depth_key(root: Path, p: Path) -> tuple[int, str]:
    rel = p.relative_to(root)
    return (len(rel.parts), str(rel))


def find_diabetes130(data_dir: str | Path) -> Path:
    """Locate ``diabetic_data.csv``, or an archive holding it.

    Parameters
    ----------
    data_dir
        A path to ``diabetic_data.csv`` (any CSV file named explicitly is accepted), to a
        ``.zip`` archive holding a member called ``diabetic_data.csv`` at any depth, or a
        directory searched recursively for either. In a directory a plain CSV is preferred over
        an archive, and a shallower match over a deeper one.

    Returns
    -------
    Path
        The CSV file or the archive.

    Raises
    ------
    DataError
        If the path does not exist, an archive named explicitly is unreadable or lacks the CSV,
        or a directory holds neither.

    """
    path = Path(data_dir).expanduser()
    if not path.exists():
        raise DataError("path does not exist", file=str(path))
    if path.is_file():
        if path.suffix.lower() == ".zip":
            try:
                member = find_csv_member(path)
            except (zipfile.BadZipFile, OSError, EOFError) as exc:
                raise DataError(f"not a readable zip archive ({exc})", file=str(path)) from exc
            if member is None:
                raise DataError(
                    f"the archive holds no member named {DIABETES130_CSV_NAME}", file=str(path)
                )
        return path
    csvs = sorted(path.rglob(DIABETES130_CSV_NAME), key=lambda p: _depth_key(path, p))
    csvs = [p for p in csvs if p.is_file()]
    if csvs:
        return csvs[0]
    zips = sorted(
        (p for p in path.rglob("*") if p.suffix.lower() == ".zip" and p.is_file()),
        key=lambda p: _depth_key(path, p),
    )
    for z in zips:
        if _zip_holds_csv(z):
            return z
    raise DataError(
        f"no {DIABETES130_CSV_NAME}, and no .zip archive holding it, found in directory "
        f"{path} (searched recursively). Download it from {DIABETES130_URL} or with "
        "fedcare_core.data.fetch.fetch_diabetes130()."
    )


# --------------------------------------------------------------------------------------------
# Reading and validating
# --------------------------------------------------------------------------------------------


def _read_source(source: Path) -> tuple[bytes, str]:
    """Return the CSV's bytes and a display name (``archive.zip:member`` for an archive)."""
    if source.suffix.lower() == ".zip":
        try:
            member = find_csv_member(source)
            if member is None:
                raise DataError(
                    f"the archive holds no member named {DIABETES130_CSV_NAME}", file=str(source)
                )
            with zipfile.ZipFile(source) as zf, zf.open(member) as fh:
                data = fh.read()
        except (zipfile.BadZipFile, EOFError, zlib.error, zipfile.LargeZipFile) as exc:
            raise DataError(
                f"not a readable zip archive; it may be truncated or corrupted ({exc})",
                file=str(source),
            ) from exc
        except OSError as exc:
            raise DataError(f"cannot read the archive ({exc})", file=str(source)) from exc
        return data, f"{source}:{member}"
    try:
        return source.read_bytes(), str(source)
    except OSError as exc:
        raise DataError(f"cannot read the file ({exc})", file=str(source)) from exc


def _rows(mask: pd.Series | np.ndarray) -> list[int]:
    """1-based data row numbers where ``mask`` is true."""
    return (np.flatnonzero(np.asarray(mask, dtype=bool)) + 1).tolist()


class _Checker:
    """Builds DataErrors for one file, adding a truncation hint where it applies."""

    def __init__(self, name: str, n_rows: int, ends_with_newline: bool) -> None:
        self.name = name
        self.n_rows = n_rows
        self.ends_with_newline = ends_with_newline

    def error(self, message: str, column: str, mask: pd.Series | np.ndarray) -> DataError:
        rows = _rows(mask)
        if not self.ends_with_newline and rows and rows[-1] == self.n_rows:
            message += "; the last line does not end with a newline, so the file looks truncated"
        return DataError(message, file=self.name, column=column, rows=rows)


def _parse(data: bytes, name: str) -> pd.DataFrame:
    """Parse the CSV bytes: ``?`` and empty fields are missing; ``None``/``NA`` stay strings."""
    if not data.strip():
        raise DataError("the file is empty", file=name)
    read_kw: dict[str, object] = {
        "keep_default_na": False,
        "na_values": ["?", ""],
        "encoding": "utf-8-sig",
        "low_memory": False,
    }
    try:
        header = pd.read_csv(io.BytesIO(data), nrows=0, **read_kw)  # type: ignore[call-overload]
        numeric = set(_NUMERIC_SOURCE_COLUMNS)
        dtype = {c: str for c in header.columns if c not in numeric}
        df: pd.DataFrame = pd.read_csv(  # type: ignore[call-overload]
            io.BytesIO(data), dtype=dtype, **read_kw
        )
    except pd.errors.EmptyDataError as exc:
        raise DataError("the file is empty", file=name) from exc
    except pd.errors.ParserError as exc:
        raise DataError(
            f"malformed CSV; the file may be truncated or have ragged rows ({exc})", file=name
        ) from exc
    except UnicodeDecodeError as exc:
        raise DataError(f"not UTF-8 text ({exc})", file=name) from exc
    except ValueError as exc:
        raise DataError(f"cannot parse the CSV ({exc})", file=name) from exc
    return df


def _check_columns(df: pd.DataFrame, name: str) -> list[str]:
    """Raise if an expected column is missing; return unexpected (ignored) columns."""
    cols = [str(c) for c in df.columns]
    missing = [c for c in DIABETES130_COLUMNS if c not in cols]
    unexpected = [c for c in cols if c not in DIABETES130_COLUMNS]
    if missing:
        msg = f"missing column(s): {', '.join(repr(c) for c in missing)}"
        if unexpected:
            msg += (
                f"; unexpected column(s): {', '.join(repr(c) for c in unexpected)} "
                "(renamed or misspelt?)"
            )
        msg += f". Expected the {len(DIABETES130_COLUMNS)} columns of {DIABETES130_CSV_NAME}."
        raise DataError(msg, file=name, column=missing[0] if len(missing) == 1 else None)
    return unexpected


def _numeric(df: pd.DataFrame, column: str, chk: _Checker) -> pd.Series:
    """Column as float; raise on non-numeric (or, where required, non-integer) values."""
    raw = df[column]
    if pd.api.types.is_numeric_dtype(raw.dtype) and not pd.api.types.is_bool_dtype(raw.dtype):
        values = raw.astype("float64")
    else:
        values = pd.to_numeric(raw, errors="coerce").astype("float64")
        bad = raw.notna() & values.isna()
        if bad.any():
            raise chk.error("non-numeric value(s) in a numeric column", column, bad)
    finite = np.isfinite(values.to_numpy()) | values.isna().to_numpy()
    if not finite.all():
        raise chk.error("infinite value(s) in a numeric column", column, ~finite)
    if column in _INTEGER_SOURCE_COLUMNS:
        frac = values.notna() & (values != np.floor(values))
        if frac.any():
            raise chk.error("non-integer value(s) in an integer column", column, frac)
    return values


def _per_unique(raw: pd.Series) -> tuple[np.ndarray, pd.Series]:
    """Factorise ``raw``: integer codes (-1 = missing) and the unique values as a Series."""
    codes, uniques = pd.factorize(raw, use_na_sentinel=True)
    return np.asarray(codes), pd.Series(np.asarray(uniques, dtype=object), dtype="str")


def _age_midpoint(raw: pd.Series, chk: _Checker) -> pd.Series:
    """``"[70-80)"`` → 75.0; missing stays NaN."""
    codes, uniques = _per_unique(raw)
    parts = uniques.str.extract(r"^\s*\[\s*(\d+)\s*-\s*(\d+)\s*\)\s*$")
    lo = pd.to_numeric(parts[0], errors="coerce").to_numpy(dtype="float64")
    hi = pd.to_numeric(parts[1], errors="coerce").to_numpy(dtype="float64")
    bad_unique = np.isnan(lo) | np.isnan(hi) | (hi < lo)
    if bad_unique.any():
        bad = (codes >= 0) & bad_unique[np.maximum(codes, 0)]
        raise chk.error("age must be a bracket such as '[70-80)'", "age", bad)
    mid = np.append((lo + hi) / 2.0, np.nan)  # index -1 → NaN
    return pd.Series(mid[codes], index=raw.index, name=raw.name, dtype="float64")


#: Strack et al. (2014), Table 2: ICD-9 ranges of the diagnosis groups (on the integer part).
_ICD9_GROUPS: tuple[tuple[str, tuple[tuple[int, int], ...]], ...] = (
    ("circulatory", ((390, 459), (785, 785))),
    ("respiratory", ((460, 519), (786, 786))),
    ("digestive", ((520, 579), (787, 787))),
    ("diabetes", ((250, 250),)),
    ("injury", ((800, 999),)),
    ("musculoskeletal", ((710, 739),)),
    ("genitourinary", ((580, 629), (788, 788))),
    ("neoplasms", ((140, 239),)),
)


def icd9_group(codes: pd.Series) -> pd.Series:
    """Map ICD-9 diagnosis codes to the Strack et al. (2014) chapter groups.

    Parameters
    ----------
    codes
        Codes as strings (``"428"``, ``"250.83"``, ``"V27"``); missing values allowed.

    Returns
    -------
    pd.Series
        One of ``circulatory``, ``respiratory``, ``digestive``, ``diabetes`` (250.xx),
        ``injury``, ``musculoskeletal``, ``genitourinary``, ``neoplasms`` or ``other``
        (everything else, including ``V``/``E`` codes and unparseable codes); missing stays
        missing.

    """
    idx, uniques = _per_unique(codes)
    num = pd.to_numeric(uniques, errors="coerce").to_numpy(dtype="float64")
    whole = np.floor(num)
    conds = []
    names = []
    for group, ranges in _ICD9_GROUPS:
        cond = np.zeros(len(num), dtype=bool)
        for lo, hi in ranges:
            cond |= (whole >= lo) & (whole <= hi)
        conds.append(cond)
        names.append(group)
    grouped = np.append(np.select(conds, names, default="other").astype(object), np.nan)
    return pd.Series(grouped[idx], index=codes.index, name=codes.name, dtype="str")


def _code_strings(values: pd.Series) -> pd.Series:
    """Whole-number float codes → strings (``1.0`` → ``"1"``); missing stays missing."""
    return values.astype("Int64").astype("str")


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------


def load_diabetes130(
    data_dir: str | Path,
    *,
    readmission: Literal["30d", "any"] = "30d",
    verify_checksum: bool = True,
) -> Cohort:
    """Load Diabetes 130-US as a three-objective cohort.

    Parameters
    ----------
    data_dir
        Path to ``diabetic_data.csv``, to a ``.zip`` holding it, or a directory holding either
        (see :func:`find_diabetes130`). An archive is streamed, never extracted to disk.
    readmission
        ``"30d"``: the readmission label is ``readmitted == "<30"`` (the standard definition);
        ``"any"``: ``readmitted != "NO"``.
    verify_checksum
        Check the CSV's SHA-256 against :data:`DIABETES130_CSV_SHA256`. Pass ``False`` (the CLI's
        ``--no-verify``) to load a modified file on purpose; its contents are validated either
        way.

    Returns
    -------
    Cohort
        One row per encounter. Objectives, in order: ``early_discharge``
        (``time_in_hospital <= 3``), ``readmission`` and ``los`` (``time_in_hospital`` in days).
        Encounters discharged expired (codes 11, 19, 20, 21) or to hospice (13, 14) have a NaN
        readmission label. 46 features (never ``encounter_id``, ``patient_nbr``,
        ``time_in_hospital`` or ``readmitted``): ``age`` as the bracket's midpoint and the seven
        counts are float; the rest are strings, with ``diag_1/2/3`` mapped to ICD-9 groups
        (:func:`icd9_group`) and missing values (``?``) left missing. ``patient`` factorises
        ``patient_nbr``; ``strata`` is ``admission_source_id``.

    Raises
    ------
    ChecksumError
        If ``verify_checksum`` and the CSV's SHA-256 differs from the published file's.
    DataError
        If the file cannot be found or read, is empty, malformed or truncated, lacks a column,
        holds a non-numeric value in a numeric column, or a label source value out of its
        domain (``time_in_hospital`` outside 1..14, ``readmitted`` outside NO/<30/>30).
    ConfigError
        If ``readmission`` is neither ``"30d"`` nor ``"any"``.

    """
    if readmission not in ("30d", "any"):
        raise ConfigError(f"readmission must be '30d' or 'any', got {readmission!r}")
    source = find_diabetes130(data_dir)
    data, name = _read_source(source)
    digest = hashlib.sha256(data).hexdigest()
    if verify_checksum and digest != DIABETES130_CSV_SHA256:
        raise ChecksumError(
            f"SHA-256 mismatch: expected {DIABETES130_CSV_SHA256}, got {digest}. This is not the "
            f"published {DIABETES130_CSV_NAME} (modified, truncated or a different version). "
            "Pass --no-verify (verify_checksum=False) to load a modified file on purpose.",
            file=name,
        )

    df = _parse(data, name)
    unexpected = _check_columns(df, name)
    if len(df) == 0:
        raise DataError("the file has a header but no data rows", file=name)
    chk = _Checker(name, len(df), data.rstrip(b" \t").endswith(b"\n"))

    # Label sources first: a truncated last row usually shows up here.
    readmitted = df["readmitted"]
    bad = ~readmitted.isin(READMITTED_VALUES)
    if bad.any():
        missing_hint = (
            " (missing or empty: a row may be truncated or have fewer than "
            f"{len(DIABETES130_COLUMNS)} fields)"
            if readmitted[bad].isna().any()
            else ""
        )
        raise chk.error(
            f"readmitted must be one of {', '.join(READMITTED_VALUES)}{missing_hint}",
            "readmitted",
            bad,
        )
    numbers = {c: _numeric(df, c, chk) for c in _NUMERIC_SOURCE_COLUMNS}
    tih = numbers["time_in_hospital"]
    lo, hi = TIME_IN_HOSPITAL_RANGE
    bad = tih.isna() | (tih < lo) | (tih > hi)
    if bad.any():
        raise chk.error(
            f"time_in_hospital must be a whole number of days from {lo} to {hi}",
            "time_in_hospital",
            bad,
        )
    patient_nbr = numbers["patient_nbr"]
    if patient_nbr.isna().any():
        raise chk.error("patient_nbr is missing", "patient_nbr", patient_nbr.isna())

    # Labels.
    early = (tih <= EARLY_DISCHARGE_MAX_DAYS).astype("float64")
    if readmission == "30d":
        readm = (readmitted == "<30").astype("float64")
    else:
        readm = (readmitted != "NO").astype("float64")
    disposition = numbers["discharge_disposition_id"]
    expired = disposition.isin(sorted(EXPIRED_DISCHARGE_IDS))
    hospice = disposition.isin(sorted(HOSPICE_DISCHARGE_IDS))
    readm = readm.mask(expired | hospice)
    labels = pd.DataFrame(
        {"early_discharge": early, "readmission": readm, "los": tih.astype("float64")}
    ).reset_index(drop=True)

    # Features.
    cols: dict[str, pd.Series] = {}
    for c in DIABETES130_FEATURES:
        if c == "age":
            cols[c] = _age_midpoint(df[c], chk)
        elif c in DIABETES130_COUNT_COLUMNS:
            cols[c] = numbers[c]
        elif c in _CODE_COLUMNS:
            cols[c] = _code_strings(numbers[c])
        elif c in _DIAG_COLUMNS:
            cols[c] = icd9_group(df[c])
        else:
            cols[c] = df[c].astype("str")
    features = pd.DataFrame(cols).reset_index(drop=True)

    codes, _ = pd.factorize(patient_nbr, sort=False)
    strata = cols["admission_source_id"].rename("admission_source_id").reset_index(drop=True)

    n_expired = int(expired.sum())
    n_hospice = int(hospice.sum())
    definition = "readmitted == '<30'" if readmission == "30d" else "readmitted != 'NO'"
    notes = [
        f"source: {name}",
        f"{len(df):,} encounters, {int(codes.max()) + 1:,} distinct patients",
        f"readmission label: {definition}",
        f"readmission: {n_expired + n_hospice:,} encounters have no label because they were "
        f"discharged expired ({n_expired:,}; discharge_disposition_id "
        f"{sorted(EXPIRED_DISCHARGE_IDS)}) or to hospice ({n_hospice:,}; "
        f"{sorted(HOSPICE_DISCHARGE_IDS)}) and cannot be readmitted",
    ]
    if not verify_checksum:
        match = "matches" if digest == DIABETES130_CSV_SHA256 else "does NOT match"
        notes.append(f"checksum not enforced; SHA-256 {digest} {match} the published file")
    if unexpected:
        notes.append(f"ignored unexpected column(s): {', '.join(unexpected)}")

    return Cohort(
        dataset="diabetes130",
        features=features,
        numeric_features=DIABETES130_NUMERIC_FEATURES,
        categorical_features=DIABETES130_CATEGORICAL_FEATURES,
        labels=labels,
        objectives=DIABETES130_OBJECTIVES,
        patient=np.asarray(codes, dtype=np.int64),
        strata=strata,
        source_sha256=digest,
        notes=tuple(notes),
        vocabularies=DIABETES130_VOCABULARIES,
    )
