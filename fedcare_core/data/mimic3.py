"""MIMIC-III v1.4 loader: the adult ICU-stay cohort with three objectives.

The loader reads the raw MIMIC-III CSV tables (``ADMISSIONS``, ``PATIENTS``, ``ICUSTAYS``,
``LABEVENTS`` and, when present, ``CHARTEVENTS``), builds one row per adult ICU stay and derives
three objectives:

* ``mortality`` (binary): ``ADMISSIONS.HOSPITAL_EXPIRE_FLAG`` of the admission holding the stay;
* ``readmission`` (binary): the same subject has another hospital admission whose ``ADMITTIME``
  falls in ``[DISCHTIME, DISCHTIME + 30 days]`` of this admission; NaN when the patient died in
  this admission (only survivors can be readmitted);
* ``los`` (regression): ``ICUSTAYS.LOS`` in days; NaN when missing or not positive.

Features use only what is known in the first 24 hours of the ICU stay: demographics, admission
fields, the first care unit, lab aggregates (``LABEVENTS`` rows of the stay's admission charted in
``[INTIME, INTIME + 24 h]``) and vital-sign aggregates (``CHARTEVENTS`` rows of the stay in the same
window). Discharge-time fields (``DISCHARGE_LOCATION``, ``DEATHTIME``, ``DIAGNOSIS``, ICD codes,
``LOS``, ``OUTTIME``, ``LAST_CAREUNIT``) are never read as features.

``LABEVENTS`` and ``CHARTEVENTS`` are streamed in chunks; each chunk is filtered at once to the
item ids used, to the cohort's admissions or stays and to the first-24 h window, so the full
``CHARTEVENTS`` (about 33 GB) is never held in memory. The retained rows are aggregated once, after
the last chunk, in file order, so the result does not depend on ``chunksize``.

Dates are read as text and parsed by the loader: ISO ``YYYY-MM-DD HH:MM[:SS]`` (the MIMIC-III
release format) is parsed directly; ``M/D/YY H:MM`` values, which a spreadsheet round trip leaves
behind (the bundled demo's ``ADMISSIONS`` and ``PATIENTS`` are written that way), get their century
back from the ICU stays' full ``INTIME`` (see :func:`_parse_times`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from fedcare_core.data.cohort import Cohort, Objective
from fedcare_core.data.partition import FeaturePartition
from fedcare_core.errors import DataError

__all__ = [
    "CATEGORICAL_FEATURES",
    "MIMIC3_FEATURES",
    "MIMIC3_OBJECTIVES",
    "MIMIC3_PARTITION",
    "MIMIC3_REQUIRED_COLUMNS",
    "NUMERIC_FEATURES",
    "load_mimic3",
]

# --------------------------------------------------------------------------------------------
# Table schemas: the columns the loader reads from each table (upper-case names).
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _TableSpec:
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


_ADMISSIONS = _TableSpec(
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
_PATIENTS = _TableSpec("PATIENTS", numeric=("SUBJECT_ID",), text=("GENDER", "DOB"))
_ICUSTAYS = _TableSpec(
    "ICUSTAYS",
    numeric=("SUBJECT_ID", "HADM_ID", "ICUSTAY_ID", "LOS"),
    text=("FIRST_CAREUNIT", "INTIME"),
)
_LABEVENTS = _TableSpec("LABEVENTS", numeric=("HADM_ID", "ITEMID", "VALUENUM"), text=("CHARTTIME",))
_CHARTEVENTS = _TableSpec(
    "CHARTEVENTS",
    numeric=("ICUSTAY_ID", "ITEMID", "VALUENUM", "ERROR"),
    text=("CHARTTIME",),
    optional=("ERROR",),
)

#: Columns the loader requires from each always-read table (upper case), for data checks.
MIMIC3_REQUIRED_COLUMNS: dict[str, tuple[str, ...]] = {
    spec.name: tuple(c for c in spec.columns if c not in spec.optional)
    for spec in (_ADMISSIONS, _PATIENTS, _ICUSTAYS, _LABEVENTS)
}

#: Window after ICU admission from which features may come.
FEATURE_WINDOW = pd.Timedelta(hours=24)
#: Readmission horizon after hospital discharge.
READMISSION_WINDOW = pd.Timedelta(days=30)
#: Age reported for patients aged 90 or more (MIMIC-III shifts their DOB ~300 years back); 91.4
#: is the median age of that group given in the MIMIC-III documentation.
AGE_90_PLUS = 91.4

# --------------------------------------------------------------------------------------------
# Lab and vital-sign items (item ids and plausibility limits follow MIT-LCP mimic-code's
# "first day" concepts: values outside (low, high) are treated as errors and ignored).
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Item:
    """A measured variable: the item ids that record it and its plausible open interval."""

    itemids: tuple[int, ...]
    low: float
    high: float
    high_inclusive: bool = False


_LAB_ITEMS: dict[str, _Item] = {
    "creatinine": _Item((50912,), 0.0, 150.0),
    "bun": _Item((51006,), 0.0, 300.0),
    "sodium": _Item((50983, 50824), 0.0, 200.0),
    "potassium": _Item((50971, 50822), 0.0, 30.0),
    "chloride": _Item((50902, 50806), 0.0, 10_000.0),
    "bicarbonate": _Item((50882,), 0.0, 10_000.0),
    "glucose": _Item((50931, 50809), 0.0, 10_000.0),
    "hemoglobin": _Item((51222, 50811), 0.0, 50.0),
    "hematocrit": _Item((51221, 50810), 0.0, 100.0),
    "wbc": _Item((51301, 51300), 0.0, 1_000.0),
    "platelets": _Item((51265,), 0.0, 10_000.0),
    "lactate": _Item((50813,), 0.0, 50.0),
    "aniongap": _Item((50868,), 0.0, 10_000.0),
    "bilirubin": _Item((50885,), 0.0, 150.0),
}

_VITAL_ITEMS: dict[str, _Item] = {
    "hr": _Item((211, 220045), 0.0, 300.0),
    "sbp": _Item((51, 442, 455, 6701, 220179, 220050), 0.0, 400.0),
    "dbp": _Item((8368, 8440, 8441, 8555, 220180, 220051), 0.0, 300.0),
    "mbp": _Item((456, 52, 6702, 443, 220052, 220181, 225312), 0.0, 300.0),
    "rr": _Item((615, 618, 220210, 224690), 0.0, 70.0),
    "temp": _Item((676, 223762), 10.0, 50.0),  # degrees Celsius
    "spo2": _Item((646, 220277), 0.0, 100.0, high_inclusive=True),
    "gcs": _Item((198,), 2.0, 15.0, high_inclusive=True),  # CareVue GCS total
}
#: Temperature items in degrees Fahrenheit, converted to Celsius after their own range check.
_TEMP_F = _Item((678, 223761), 70.0, 120.0)
#: MetaVision GCS components (eye, verbal, motor): summed when all three share a CHARTTIME.
_GCS_COMPONENTS: dict[int, tuple[float, float]] = {
    220739: (1.0, 4.0),
    223900: (1.0, 5.0),
    223901: (1.0, 6.0),
}

# --------------------------------------------------------------------------------------------
# The 46 features and the default partition.
# --------------------------------------------------------------------------------------------

#: Categorical features (strings, NaN = missing).
CATEGORICAL_FEATURES: tuple[str, ...] = (
    "gender",
    "ethnicity",
    "admission_type",
    "admission_location",
    "insurance",
    "marital_status",
    "first_careunit",
)

#: Declared category lists, from the MIMIC-III v1.4 documentation (ADMISSIONS, PATIENTS,
#: ICUSTAYS): every client encodes a shared feature the same way without seeing others' rows.
MIMIC3_VOCABULARIES: dict[str, tuple[str, ...]] = {
    "gender": ("F", "M"),
    "ethnicity": ("WHITE", "BLACK", "HISPANIC", "ASIAN", "OTHER"),
    "admission_type": ("ELECTIVE", "EMERGENCY", "URGENT", "NEWBORN"),
    "admission_location": (
        "EMERGENCY ROOM ADMIT",
        "TRANSFER FROM HOSP/EXTRAM",
        "CLINIC REFERRAL/PREMATURE",
        "PHYS REFERRAL/NORMAL DELI",
        "TRANSFER FROM SKILLED NUR",
        "TRANSFER FROM OTHER HEALT",
        "HMO REFERRAL/SICK",
        "TRSF WITHIN THIS FACILITY",
        "** INFO NOT AVAILABLE **",
    ),
    "insurance": ("Medicare", "Private", "Medicaid", "Government", "Self Pay"),
    "marital_status": ("MARRIED", "SINGLE", "WIDOWED", "DIVORCED", "SEPARATED", "LIFE PARTNER"),
    "first_careunit": ("MICU", "SICU", "CCU", "TSICU", "CSRU"),
}

#: Lab aggregates: (lab, aggregate) in feature order; the feature is ``f"{lab}_{agg}"``.
_LAB_FEATURES: tuple[tuple[str, str], ...] = (
    *((lab, "mean") for lab in _LAB_ITEMS),
    ("creatinine", "max"),
    ("bun", "max"),
    ("sodium", "min"),
    ("potassium", "max"),
    ("bicarbonate", "min"),
    ("glucose", "max"),
    ("wbc", "max"),
    ("platelets", "min"),
    ("lactate", "max"),
)

#: Vital-sign aggregates: (vital, aggregate) in feature order.
_VITAL_FEATURES: tuple[tuple[str, str], ...] = (
    ("hr", "mean"),
    ("hr", "min"),
    ("hr", "max"),
    ("sbp", "mean"),
    ("sbp", "min"),
    ("dbp", "mean"),
    ("mbp", "mean"),
    ("mbp", "min"),
    ("rr", "mean"),
    ("rr", "max"),
    ("temp", "mean"),
    ("temp", "max"),
    ("spo2", "mean"),
    ("spo2", "min"),
    ("gcs", "min"),
)

_LAB_COLUMNS = tuple(f"{v}_{a}" for v, a in _LAB_FEATURES)
_VITAL_COLUMNS = tuple(f"{v}_{a}" for v, a in _VITAL_FEATURES)

#: Numeric features (float, NaN = missing): age, 23 lab and 15 vital-sign aggregates.
NUMERIC_FEATURES: tuple[str, ...] = ("age", *_LAB_COLUMNS, *_VITAL_COLUMNS)
#: All 46 features, in the column order of :attr:`Cohort.features`.
MIMIC3_FEATURES: tuple[str, ...] = (
    "age",
    *CATEGORICAL_FEATURES,
    *_LAB_COLUMNS,
    *_VITAL_COLUMNS,
)

#: The three objectives, in label-column order.
MIMIC3_OBJECTIVES: tuple[Objective, ...] = (
    Objective(
        "mortality",
        "binary",
        "in-hospital death in the admission holding the ICU stay (HOSPITAL_EXPIRE_FLAG)",
    ),
    Objective(
        "readmission",
        "binary",
        "another hospital admission of the same patient within 30 days after discharge "
        "(survivors only; NaN for in-hospital deaths)",
    ),
    Objective("los", "regression", "ICU length of stay in days (ICUSTAYS.LOS)"),
)

#: Default MIMIC-III partition (paper §V-D): 19 common features and 9 private ones per objective.
#:
#: * Common (19): everything known at ICU admission that every site records — age and the seven
#:   demographic/admission/care-unit categories — plus the mean of the eleven routine labs (basic
#:   metabolic panel and complete blood count), which every hospital measures.
#: * Private pools (9 each = 4 lab extremes/specialised labs + 5 vital-sign aggregates), each
#:   chosen for clinical relevance to its objective so that every pool stays informative even when
#:   CHARTEVENTS is absent and the vitals are all missing:
#:
#:   - mortality: markers of shock and organ failure (lactate max, anion gap, bicarbonate min,
#:     bilirubin; worst GCS, lowest systolic and mean pressure, lowest SpO2, highest heart rate);
#:   - readmission: markers of chronic disease burden (creatinine and BUN max, sodium min,
#:     platelets min; mean heart rate, systolic and diastolic pressure, temperature and SpO2);
#:   - los: markers of infection and metabolic derangement (WBC, glucose and potassium max, mean
#:     lactate; respiratory rate mean and max, highest temperature, lowest heart rate, mean MBP).
MIMIC3_PARTITION = FeaturePartition(
    common=(
        "age",
        "gender",
        "ethnicity",
        "admission_type",
        "admission_location",
        "insurance",
        "marital_status",
        "first_careunit",
        "creatinine_mean",
        "bun_mean",
        "sodium_mean",
        "potassium_mean",
        "chloride_mean",
        "bicarbonate_mean",
        "glucose_mean",
        "hemoglobin_mean",
        "hematocrit_mean",
        "wbc_mean",
        "platelets_mean",
    ),
    private={
        "mortality": (
            "lactate_max",
            "aniongap_mean",
            "bicarbonate_min",
            "bilirubin_mean",
            "gcs_min",
            "sbp_min",
            "mbp_min",
            "spo2_min",
            "hr_max",
        ),
        "readmission": (
            "creatinine_max",
            "bun_max",
            "sodium_min",
            "platelets_min",
            "hr_mean",
            "sbp_mean",
            "dbp_mean",
            "temp_mean",
            "spo2_mean",
        ),
        "los": (
            "wbc_max",
            "glucose_max",
            "potassium_max",
            "lactate_mean",
            "rr_mean",
            "rr_max",
            "temp_max",
            "hr_min",
            "mbp_mean",
        ),
    },
)

# --------------------------------------------------------------------------------------------
# File discovery and chunked, validated reading.
# --------------------------------------------------------------------------------------------

_NUMERIC_DIAG_CAP = 1_000_000


def _find_table(data_dir: Path, table: str, *, required: bool) -> Path | None:
    """Return the file holding ``table`` in ``data_dir``: ``NAME.csv`` or ``NAME.csv.gz``, any case.

    Raises
    ------
    DataError
        If a required table is missing (the message lists the CSV files found) or two files
        could hold the same table.

    """
    wanted = {f"{table.lower()}.csv", f"{table.lower()}.csv.gz"}
    entries = sorted(p for p in data_dir.iterdir() if p.is_file())
    hits = [p for p in entries if p.name.lower() in wanted]
    if len(hits) > 1:
        names = ", ".join(p.name for p in hits)
        raise DataError(f"several files could hold MIMIC-III table {table} in {data_dir}: {names}")
    if hits:
        return hits[0]
    if not required:
        return None
    found = [p.name for p in entries if p.name.lower().endswith((".csv", ".csv.gz"))]
    listing = ", ".join(found) if found else "no CSV files"
    raise DataError(
        f"required MIMIC-III table {table} not found in {data_dir} "
        f"(expected {table}.csv or {table}.csv.gz, upper or lower case); found: {listing}"
    )


def _header(path: Path, spec: _TableSpec) -> dict[str, str]:
    """Map each wanted upper-case column to its spelling in ``path``'s header.

    Raises
    ------
    DataError
        If the file is empty or unreadable, or a required column is missing.

    """
    try:
        cols = pd.read_csv(path, nrows=0).columns
    except pd.errors.EmptyDataError:
        raise DataError(f"the {spec.name} file is empty", file=str(path)) from None
    except (OSError, UnicodeDecodeError, EOFError, pd.errors.ParserError) as exc:
        raise DataError(f"cannot read the {spec.name} file as CSV: {exc}", file=str(path)) from exc
    by_upper: dict[str, str] = {}
    for c in cols:
        by_upper.setdefault(str(c).strip().upper(), str(c))
    out: dict[str, str] = {}
    for col in spec.columns:
        if col in by_upper:
            out[col] = by_upper[col]
        elif col not in spec.optional:
            raise DataError(
                f"required column {col} is missing from the {spec.name} table "
                f"(columns found: {', '.join(str(c) for c in cols)})",
                file=str(path),
                column=col,
            )
    return out


def _iter_table(path: Path, spec: _TableSpec, chunksize: int) -> Iterator[pd.DataFrame]:
    """Yield ``path`` in chunks of the spec's columns, upper-cased, plus ``_ROW`` (1-based).

    Numeric columns come back as float64 and text columns as strings. A non-numeric value in a
    numeric column raises :class:`DataError` naming the column and the offending rows.
    """
    names = _header(path, spec)
    dtype: dict[str, str] = {names[c]: "float64" for c in spec.numeric if c in names}
    dtype.update({names[c]: "str" for c in spec.text if c in names})
    rename = {actual: upper for upper, actual in names.items()}
    offset = 0
    try:
        reader = pd.read_csv(path, usecols=list(dtype), dtype=dtype, chunksize=chunksize)
        with reader:
            for chunk in reader:
                chunk = chunk.rename(columns=rename)
                chunk["_ROW"] = np.arange(offset + 1, offset + len(chunk) + 1, dtype=np.int64)
                offset += len(chunk)
                if len(chunk):
                    yield chunk
    except ValueError as exc:
        if isinstance(exc, pd.errors.ParserError):
            raise DataError(
                f"malformed CSV in the {spec.name} table: {exc}", file=str(path)
            ) from exc
        located = _locate_non_numeric(path, spec, names, chunksize)
        if located is not None:
            raise located from None
        raise DataError(f"cannot read the {spec.name} table: {exc}", file=str(path)) from exc
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read the {spec.name} table: {exc}", file=str(path)) from exc
    if offset == 0:
        raise DataError(f"the {spec.name} file has a header but no data rows", file=str(path))


def _locate_non_numeric(
    path: Path, spec: _TableSpec, names: Mapping[str, str], chunksize: int
) -> DataError | None:
    """Re-read ``path`` as text to find non-numeric values in numeric columns (error path only)."""
    numeric = [c for c in spec.numeric if c in names]
    bad: dict[str, list[int]] = {}
    examples: dict[str, str] = {}
    offset = 0
    reader = pd.read_csv(
        path,
        usecols=[names[c] for c in numeric],
        dtype=str,
        chunksize=max(chunksize, 100_000),
    )
    with reader:
        for chunk in reader:
            for col in numeric:
                raw = chunk[names[col]]
                mask = (raw.notna() & pd.to_numeric(raw, errors="coerce").isna()).to_numpy()
                if mask.any():
                    idx = np.flatnonzero(mask)
                    rows = bad.setdefault(col, [])
                    if len(rows) < _NUMERIC_DIAG_CAP:
                        rows.extend((offset + idx + 1).tolist())
                    examples.setdefault(col, str(raw.iloc[int(idx[0])]))
            offset += len(chunk)
    if not bad:
        return None
    col = next(c for c in numeric if c in bad)
    others = [c for c in numeric if c in bad and c != col]
    also = f" (columns {', '.join(others)} also hold non-numeric values)" if others else ""
    return DataError(
        f"non-numeric value in numeric column {col} of the {spec.name} table, "
        f"e.g. {examples[col]!r}{also}",
        file=str(path),
        column=col,
        rows=bad[col],
    )


def _read_small(path: Path, spec: _TableSpec, chunksize: int) -> pd.DataFrame:
    """Read a whole (small) table through :func:`_iter_table`."""
    chunks = list(_iter_table(path, spec, chunksize))
    return pd.concat(chunks, ignore_index=True)


def _sha256(path: Path) -> str:
    """SHA-256 of the file's bytes (as stored: a ``.csv.gz`` is hashed compressed)."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# --------------------------------------------------------------------------------------------
# Date/time parsing.
# --------------------------------------------------------------------------------------------

_ISO_RE = r"^\d{4}-\d{1,2}-\d{1,2}(?:[ T]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?$"
_US_RE = r"^(\d{1,2})/(\d{1,2})/(\d{2}|\d{4})(?:\s+(\d{1,2}):(\d{2})(?::(\d{2}))?)?$"
_CENTURIES = (1800, 1900, 2000, 2100, 2200)
_TimeRule = Literal["nearest", "latest_not_after"]


@dataclass
class _TimeStats:
    """Counts of date values given with a two-digit year, per ``TABLE.COLUMN``."""

    two_digit: dict[str, int]
    unresolved: dict[str, int]

    def add(self, key: str, n_two: int, n_unresolved: int) -> None:
        """Accumulate counts for ``key``."""
        if n_two:
            self.two_digit[key] = self.two_digit.get(key, 0) + n_two
        if n_unresolved:
            self.unresolved[key] = self.unresolved.get(key, 0) + n_unresolved


def _parse_times(
    raw: pd.Series,
    *,
    rows: np.ndarray,
    path: Path,
    column: str,
    anchor: pd.Series | None,
    rule: _TimeRule,
    stats: _TimeStats,
    table: str,
) -> pd.Series:
    """Parse date/time strings; restore the century of two-digit years from ``anchor``.

    ISO values (``YYYY-MM-DD[ HH:MM[:SS]]``) and ``M/D/YYYY[ H:MM[:SS]]`` values are parsed as
    they are. A ``M/D/YY`` value is ambiguous by whole centuries; its year is taken from
    1800-2299 so that the value is the one nearest ``anchor`` (``rule="nearest"``, for
    admission times anchored on the stay's ICU ``INTIME``) or the latest one not after
    ``anchor`` (``rule="latest_not_after"``, for dates of birth anchored on the first ICU
    ``INTIME``). Without an anchor such a value becomes NaT (counted in ``stats``).

    Parameters
    ----------
    raw
        The strings (NaN = missing).
    rows
        1-based data row numbers of ``raw``'s entries, for error messages.
    path, column, table
        Where the values come from, for error messages and ``stats``.
    anchor
        Reference times aligned with ``raw``, or None when there is none.
    rule
        How a two-digit year's century is chosen.
    stats
        Counters updated with the two-digit and unresolved values seen.

    Returns
    -------
    pandas.Series
        ``datetime64[us]`` values aligned with ``raw``.

    Raises
    ------
    DataError
        If a non-missing value is neither ISO nor ``M/D/Y`` (rows named), or two-digit years
        occur where no anchor exists.

    """
    s = raw.astype("str").str.strip()
    present = s.notna() & (s != "")
    iso = present & s.str.match(_ISO_RE).fillna(False).astype(bool)
    out = pd.Series(pd.NaT, index=raw.index, dtype="datetime64[us]")
    if iso.any():
        out.loc[iso] = pd.to_datetime(s[iso], format="ISO8601", errors="coerce").astype(
            "datetime64[us]"
        )
    rest = present & ~iso
    n_two = n_unresolved = 0
    if rest.any():
        parts = s[rest].str.extract(_US_RE)
        matched = parts[0].notna()
        if not matched.all():
            bad_pos = np.flatnonzero(rest.to_numpy())[~matched.to_numpy()]
            raise DataError(
                f"unrecognised date/time in the {table} table, e.g. {s.iloc[int(bad_pos[0])]!r} "
                "(expected YYYY-MM-DD HH:MM:SS)",
                file=str(path),
                column=column,
                rows=rows[bad_pos].tolist(),
            )
        month = parts[0].astype(int)
        day = parts[1].astype(int)
        year_txt = parts[2]
        hour = parts[3].fillna("0").astype(int)
        minute = parts[4].fillna("0").astype(int)
        second = parts[5].fillna("0").astype(int)
        two = (year_txt.str.len() == 2).to_numpy()
        n_two = int(two.sum())
        if n_two and anchor is None:
            bad_pos = np.flatnonzero(rest.to_numpy())[two]
            raise DataError(
                f"two-digit years in the {table} table cannot be resolved (no reference date); "
                "write full years (YYYY-MM-DD HH:MM:SS)",
                file=str(path),
                column=column,
                rows=rows[bad_pos].tolist(),
            )
        yy = year_txt.astype(int).to_numpy()

        def compose(years: np.ndarray) -> pd.Series:
            text = pd.Series(
                [
                    f"{y:04d}-{mo:02d}-{d:02d} {h:02d}:{mi:02d}:{se:02d}"
                    for y, mo, d, h, mi, se in zip(
                        years, month, day, hour, minute, second, strict=True
                    )
                ],
                index=parts.index,
                dtype="str",
            )
            return pd.to_datetime(text, format="%Y-%m-%d %H:%M:%S", errors="coerce").astype(
                "datetime64[us]"
            )

        value = compose(yy)
        if n_two:
            assert anchor is not None
            ref = anchor[rest].astype("datetime64[us]").to_numpy()
            best = value.to_numpy().copy()
            best[two] = np.datetime64("NaT")
            best_cost = np.full(len(best), np.inf)
            for century in _CENTURIES:
                cand = compose(np.where(two, century + yy, yy)).to_numpy()
                delta = (ref - cand) / np.timedelta64(1, "s")  # ref - candidate, seconds
                ok = two & ~np.isnat(cand) & ~np.isnat(ref)
                if rule == "nearest":
                    cost = np.abs(delta)
                else:  # latest candidate not after the anchor (1-day tolerance)
                    ok &= delta >= -86_400
                    cost = delta
                take = ok & (cost < best_cost)
                best[take] = cand[take]
                best_cost[take] = cost[take]
            value = pd.Series(best, index=parts.index, dtype="datetime64[us]")
            n_unresolved = int((two & np.isnat(best)).sum())
        invalid = value.isna().to_numpy() & ~two
        if invalid.any():
            bad_pos = np.flatnonzero(rest.to_numpy())[invalid]
            raise DataError(
                f"invalid date in the {table} table, e.g. {s.iloc[int(bad_pos[0])]!r}",
                file=str(path),
                column=column,
                rows=rows[bad_pos].tolist(),
            )
        out.loc[rest] = value
    bad_iso = iso & out.isna()
    if bad_iso.any():
        bad_pos = np.flatnonzero(bad_iso.to_numpy())
        raise DataError(
            f"invalid date in the {table} table, e.g. {s.iloc[int(bad_pos[0])]!r}",
            file=str(path),
            column=column,
            rows=rows[bad_pos].tolist(),
        )
    stats.add(f"{table}.{column}", n_two, n_unresolved)
    return out


# --------------------------------------------------------------------------------------------
# Categorical clean-up.
# --------------------------------------------------------------------------------------------

_MISSING_MARKERS = {
    "",
    "UNKNOWN",
    "UNKNOWN (DEFAULT)",
    "** INFO NOT AVAILABLE **",
    "NOT SPECIFIED",
}
_ETHNICITY_MISSING = {
    "UNKNOWN/NOT SPECIFIED",
    "UNABLE TO OBTAIN",
    "PATIENT DECLINED TO ANSWER",
    "UNKNOWN",
}


def _clean_category(values: pd.Series) -> pd.Series:
    """Strip strings and turn MIMIC's 'unknown' markers into NaN; return a ``str`` Series."""
    s = values.astype("str").str.strip()
    return s.where(~s.str.upper().isin(_MISSING_MARKERS)).astype("str")


def _ethnicity_group(values: pd.Series) -> pd.Series:
    """Group MIMIC-III's ~40 ethnicity strings into WHITE, BLACK, HISPANIC, ASIAN, OTHER."""
    s = values.astype("str").str.strip().str.upper()
    known = (s.notna() & (s != "") & ~s.isin(_ETHNICITY_MISSING)).to_numpy(dtype=bool)
    groups = np.full(len(s), np.nan, dtype=object)
    groups[known] = "OTHER"
    for prefix, group in (
        ("WHITE", "WHITE"),
        ("BLACK", "BLACK"),
        ("HISPANIC", "HISPANIC"),
        ("SOUTH AMERICAN", "HISPANIC"),
        ("ASIAN", "ASIAN"),
    ):
        hit = s.str.startswith(prefix).fillna(False).to_numpy(dtype=bool)
        groups[known & hit] = group
    return pd.Series(groups, index=values.index, dtype="str")


def _gender(values: pd.Series) -> pd.Series:
    """``M``/``F``; anything else becomes NaN."""
    s = values.astype("str").str.strip().str.upper()
    return s.where(s.isin({"M", "F"})).astype("str")


# --------------------------------------------------------------------------------------------
# Event streaming.
# --------------------------------------------------------------------------------------------


def _in_range(values: np.ndarray, item: _Item) -> np.ndarray:
    """Whether each value lies in the item's plausible interval."""
    upper = values <= item.high if item.high_inclusive else values < item.high
    return (values > item.low) & upper


def _stream_labs(
    path: Path,
    stays: pd.DataFrame,
    admit_by_hadm: pd.Series,
    chunksize: int,
    stats: _TimeStats,
) -> tuple[pd.DataFrame, int]:
    """Lab aggregates per stay from LABEVENTS rows in ``[INTIME, INTIME + 24 h]``.

    Parameters
    ----------
    path
        The LABEVENTS file.
    stays
        Cohort stays: ``HADM_ID`` and ``INTIME`` per row (row order = cohort position).
    admit_by_hadm
        ``ADMITTIME`` by ``HADM_ID`` (anchor for two-digit years, if any).
    chunksize
        Rows per chunk.
    stats
        Date-format counters.

    Returns
    -------
    tuple
        The aggregate columns (one row per stay) and the number of lab values used.

    """
    names = list(_LAB_ITEMS)
    code_of = {i: code for code, name in enumerate(names) for i in _LAB_ITEMS[name].itemids}
    itemids = np.array(sorted(code_of), dtype=np.float64)
    hadms = stays["HADM_ID"].unique()
    stay_pos = pd.DataFrame(
        {
            "HADM_ID": stays["HADM_ID"].to_numpy(),
            "_POS": np.arange(len(stays), dtype=np.int64),
            "INTIME": stays["INTIME"].to_numpy(),
        }
    )
    kept: list[pd.DataFrame] = []
    for chunk in _iter_table(path, _LABEVENTS, chunksize):
        keep = (
            chunk["ITEMID"].isin(itemids) & chunk["HADM_ID"].isin(hadms) & chunk["VALUENUM"].notna()
        )
        sub = chunk.loc[keep]
        if sub.empty:
            continue
        times = _parse_times(
            sub["CHARTTIME"],
            rows=sub["_ROW"].to_numpy(),
            path=path,
            column="CHARTTIME",
            anchor=sub["HADM_ID"].map(admit_by_hadm),
            rule="nearest",
            stats=stats,
            table="LABEVENTS",
        )
        ev = pd.DataFrame(
            {
                "HADM_ID": sub["HADM_ID"].to_numpy(),
                "CODE": sub["ITEMID"].map(code_of).to_numpy(dtype=np.int8),
                "VALUE": sub["VALUENUM"].to_numpy(dtype=np.float64),
                "TIME": times.to_numpy(),
                "_ROW": sub["_ROW"].to_numpy(),
            }
        )
        # An admission may hold several ICU stays: a lab value counts for each stay whose
        # window contains it.
        ev = ev.merge(stay_pos, on="HADM_ID", how="inner")
        in_window = (ev["TIME"] >= ev["INTIME"]) & (ev["TIME"] <= ev["INTIME"] + FEATURE_WINDOW)
        ev = ev.loc[in_window.to_numpy()]
        vals = ev["VALUE"].to_numpy()
        codes = ev["CODE"].to_numpy()
        valid = np.zeros(len(ev), dtype=bool)
        for code, name in enumerate(names):
            sel = codes == code
            valid[sel] = _in_range(vals[sel], _LAB_ITEMS[name])
        ev = ev.loc[valid, ["_POS", "CODE", "VALUE", "_ROW"]]
        if len(ev):
            kept.append(ev)
    events = _concat_events(kept, ["_POS", "CODE", "VALUE", "_ROW"])
    return _aggregate(events, names, _LAB_FEATURES, len(stays)), len(events)


def _stream_vitals(
    path: Path,
    stays: pd.DataFrame,
    chunksize: int,
    stats: _TimeStats,
) -> tuple[pd.DataFrame, int, int]:
    """Vital-sign aggregates per stay from CHARTEVENTS rows in ``[INTIME, INTIME + 24 h]``.

    Rows flagged ``ERROR = 1`` are ignored; Fahrenheit temperatures are converted to Celsius;
    MetaVision GCS is the sum of its three components charted at the same time.

    Parameters
    ----------
    path
        The CHARTEVENTS file.
    stays
        Cohort stays: ``ICUSTAY_ID`` and ``INTIME`` per row (row order = cohort position).
    chunksize
        Rows per chunk.
    stats
        Date-format counters.

    Returns
    -------
    tuple
        The aggregate columns (one row per stay), the number of chart values used and the
        number of rows skipped as ``ERROR = 1``.

    """
    names = list(_VITAL_ITEMS)
    spec_of: dict[int, _Item] = {}
    code_of: dict[int, int] = {}
    for code, name in enumerate(names):
        for itemid in _VITAL_ITEMS[name].itemids:
            spec_of[itemid], code_of[itemid] = _VITAL_ITEMS[name], code
    for itemid in _TEMP_F.itemids:
        spec_of[itemid], code_of[itemid] = _TEMP_F, names.index("temp")
    for itemid, (lo, hi) in _GCS_COMPONENTS.items():
        spec_of[itemid] = _Item((itemid,), lo - 0.5, hi, high_inclusive=True)
        code_of[itemid] = -1  # a component, summed later
    fahrenheit = np.array(_TEMP_F.itemids, dtype=np.int64)
    itemids = np.array(sorted(spec_of), dtype=np.float64)
    pos_by_stay = pd.Series(np.arange(len(stays)), index=stays["ICUSTAY_ID"].to_numpy())
    intime = stays["INTIME"].to_numpy()
    kept: list[pd.DataFrame] = []
    kept_parts: list[pd.DataFrame] = []
    n_error = 0
    for chunk in _iter_table(path, _CHARTEVENTS, chunksize):
        keep = (
            chunk["ITEMID"].isin(itemids)
            & chunk["ICUSTAY_ID"].isin(pos_by_stay.index)
            & chunk["VALUENUM"].notna()
        )
        if "ERROR" in chunk.columns:
            flagged = keep & (chunk["ERROR"] == 1)
            n_error += int(flagged.sum())
            keep &= ~flagged
        sub = chunk.loc[keep]
        if sub.empty:
            continue
        pos = sub["ICUSTAY_ID"].map(pos_by_stay).to_numpy(dtype=np.int64)
        start = pd.Series(intime[pos], index=sub.index).astype("datetime64[us]")
        times = _parse_times(
            sub["CHARTTIME"],
            rows=sub["_ROW"].to_numpy(),
            path=path,
            column="CHARTTIME",
            anchor=start,
            rule="nearest",
            stats=stats,
            table="CHARTEVENTS",
        )
        win = ((times >= start) & (times <= start + FEATURE_WINDOW)).to_numpy()
        item = sub["ITEMID"].to_numpy(dtype=np.int64)[win]
        vals = sub["VALUENUM"].to_numpy(dtype=np.float64)[win]
        valid = np.zeros(len(item), dtype=bool)
        codes = np.zeros(len(item), dtype=np.int8)
        for itemid in np.unique(item):
            sel = item == itemid
            valid[sel] = _in_range(vals[sel], spec_of[int(itemid)])
            codes[sel] = code_of[int(itemid)]
        vals = np.where(np.isin(item, fahrenheit), (vals - 32.0) / 1.8, vals)
        rows = sub["_ROW"].to_numpy()[win]
        main = valid & (codes >= 0)
        part = valid & (codes < 0)
        if main.any():
            kept.append(
                pd.DataFrame(
                    {
                        "_POS": pos[win][main],
                        "CODE": codes[main],
                        "VALUE": vals[main],
                        "_ROW": rows[main],
                    }
                )
            )
        if part.any():
            kept_parts.append(
                pd.DataFrame(
                    {
                        "_POS": pos[win][part],
                        "ITEMID": item[part],
                        "TIME": times.to_numpy()[win][part],
                        "VALUE": vals[part],
                        "_ROW": rows[part],
                    }
                )
            )
    events = _concat_events(kept, ["_POS", "CODE", "VALUE", "_ROW"])
    parts = _concat_events(kept_parts, ["_POS", "ITEMID", "TIME", "VALUE", "_ROW"])
    n_used = len(events) + len(parts)
    gcs = _metavision_gcs(parts, names.index("gcs"))
    if len(gcs):
        events = _concat_events([events, gcs], ["_POS", "CODE", "VALUE", "_ROW"])
    return _aggregate(events, names, _VITAL_FEATURES, len(stays)), n_used, n_error


def _concat_events(kept: Sequence[pd.DataFrame], columns: Sequence[str]) -> pd.DataFrame:
    """Concatenate retained event rows in file order (so chunking cannot change results)."""
    if not kept:
        return pd.DataFrame({c: np.array([], dtype=np.int64) for c in columns})
    events = pd.concat(list(kept), ignore_index=True)
    return events.sort_values(["_ROW", "_POS"], kind="stable").reset_index(drop=True)


def _metavision_gcs(parts: pd.DataFrame, gcs_code: int) -> pd.DataFrame:
    """GCS totals from MetaVision components: eye + verbal + motor charted at the same time.

    The first value of each component per (stay, time) in file order is used; times missing a
    component give no total. Each total takes the file row of its last component.
    """
    if parts.empty:
        return parts
    first = parts.drop_duplicates(["_POS", "TIME", "ITEMID"], keep="first")
    wide = first.pivot(index=["_POS", "TIME"], columns="ITEMID", values="VALUE")
    wide = wide.reindex(columns=list(_GCS_COMPONENTS))
    complete = wide.notna().all(axis=1).to_numpy()
    total = wide.loc[complete].sum(axis=1)
    last_row = first.groupby(["_POS", "TIME"])["_ROW"].max().reindex(total.index)
    return pd.DataFrame(
        {
            "_POS": total.index.get_level_values("_POS").to_numpy(dtype=np.int64),
            "CODE": np.full(len(total), gcs_code, dtype=np.int8),
            "VALUE": total.to_numpy(dtype=np.float64),
            "_ROW": last_row.to_numpy(dtype=np.int64),
        }
    )


def _aggregate(
    events: pd.DataFrame,
    names: Sequence[str],
    features: Sequence[tuple[str, str]],
    n_rows: int,
) -> pd.DataFrame:
    """Per-stay aggregates of ``events`` (columns ``_POS``, ``CODE``, ``VALUE``).

    ``CODE`` indexes ``names``. Returns a float frame with one column ``f"{name}_{agg}"`` per
    entry of ``features`` and ``n_rows`` rows (NaN where a stay has no value).
    """
    out = pd.DataFrame(index=pd.RangeIndex(n_rows))
    stats = (
        events.groupby(["CODE", "_POS"], sort=True)["VALUE"].agg(["mean", "min", "max"])
        if len(events)
        else None
    )
    for name, agg in features:
        col = np.full(n_rows, np.nan)
        code = names.index(name)
        if stats is not None and code in stats.index.get_level_values("CODE"):
            series = stats[agg].xs(code, level="CODE")
            col[series.index.to_numpy(dtype=np.int64)] = series.to_numpy(dtype=np.float64)
        out[f"{name}_{agg}"] = col
    return out


# --------------------------------------------------------------------------------------------
# The loader.
# --------------------------------------------------------------------------------------------


def _check_unique(df: pd.DataFrame, key: str, path: Path, table: str) -> None:
    """Raise :class:`DataError` if ``key`` repeats in ``df`` (rows named)."""
    dup = df[key].duplicated(keep=False) & df[key].notna()
    if dup.any():
        raise DataError(
            f"duplicate {key} values in the {table} table",
            file=str(path),
            column=key,
            rows=df.loc[dup, "_ROW"].tolist(),
        )


def _check_flag(df: pd.DataFrame, col: str, path: Path, table: str) -> None:
    """Raise :class:`DataError` if ``col`` holds values other than 0, 1 or missing."""
    bad = df[col].notna() & ~df[col].isin([0.0, 1.0])
    if bad.any():
        raise DataError(
            f"{col} in the {table} table must be 0 or 1",
            file=str(path),
            column=col,
            rows=df.loc[bad, "_ROW"].tolist(),
        )


def _readmission(adm: pd.DataFrame, hadm: np.ndarray) -> np.ndarray:
    """30-day readmission label for each admission id in ``hadm`` (NaN for in-hospital deaths).

    A label is 1 when another admission of the same subject has its ``ADMITTIME`` in
    ``[DISCHTIME, DISCHTIME + 30 days]``, else 0; NaN when the patient died in the admission
    (``HOSPITAL_EXPIRE_FLAG = 1``) or the flag or ``DISCHTIME`` is missing.
    """
    base = adm.loc[adm["HADM_ID"].isin(hadm), ["SUBJECT_ID", "HADM_ID", "DISCHTIME"]]
    others = adm.loc[
        adm["SUBJECT_ID"].isin(base["SUBJECT_ID"]), ["SUBJECT_ID", "HADM_ID", "ADMITTIME"]
    ]
    pairs = base.merge(others, on="SUBJECT_ID", suffixes=("", "_NEXT"))
    gap = pairs["ADMITTIME"] - pairs["DISCHTIME"]
    hit = (
        (pairs["HADM_ID_NEXT"] != pairs["HADM_ID"])
        & (gap >= pd.Timedelta(0))
        & (gap <= READMISSION_WINDOW)
    )
    readmitted = set(pairs.loc[hit, "HADM_ID"].to_numpy().tolist())
    info = adm.set_index("HADM_ID")
    flag = info["HOSPITAL_EXPIRE_FLAG"].reindex(hadm).to_numpy(dtype=np.float64)
    disch = info["DISCHTIME"].reindex(hadm)
    label = np.array([1.0 if h in readmitted else 0.0 for h in hadm.tolist()])
    eligible = (flag == 0.0) & disch.notna().to_numpy()
    return np.where(eligible, label, np.nan)


def load_mimic3(
    data_dir: str | Path, *, chunksize: int = 2_000_000, min_age: float = 18.0
) -> Cohort:
    """Load the adult MIMIC-III ICU-stay cohort with its three objectives.

    Parameters
    ----------
    data_dir
        Directory holding the MIMIC-III v1.4 CSV tables ``ADMISSIONS``, ``PATIENTS``,
        ``ICUSTAYS``, ``LABEVENTS`` and optionally ``CHARTEVENTS``, each as ``NAME.csv`` or
        ``NAME.csv.gz`` (file names and column headers in upper or lower case).
    chunksize
        Rows per chunk when streaming the tables; the result does not depend on it.
    min_age
        Minimum age in years at ICU admission (``INTIME``).

    Returns
    -------
    Cohort
        One row per adult ICU stay: the 46 features of :data:`MIMIC3_FEATURES`, labels
        ``mortality``, ``readmission`` and ``los``, ``patient`` = integer codes of
        ``SUBJECT_ID`` (0..n_patients-1, in ascending id order), ``strata`` =
        ``ADMISSION_LOCATION`` (``"UNKNOWN"`` when missing), ``source_sha256`` = SHA-256 of the
        ICUSTAYS file and notes on how the cohort was built.

    Raises
    ------
    DataError
        If the directory or a required table is missing, a required column is missing, a file
        is empty, a numeric column holds text, a date cannot be parsed, or keys repeat.

    """
    if chunksize < 1:
        raise ValueError(f"chunksize must be positive, got {chunksize}")
    root = Path(data_dir)
    if not root.is_dir():
        raise DataError(f"MIMIC-III directory {root} does not exist or is not a directory")
    icu_path = _find_table(root, "ICUSTAYS", required=True)
    adm_path = _find_table(root, "ADMISSIONS", required=True)
    pat_path = _find_table(root, "PATIENTS", required=True)
    lab_path = _find_table(root, "LABEVENTS", required=True)
    chart_path = _find_table(root, "CHARTEVENTS", required=False)
    assert icu_path is not None and adm_path is not None
    assert pat_path is not None and lab_path is not None
    # Fail fast on missing columns in the big tables before reading anything large.
    _header(lab_path, _LABEVENTS)
    if chart_path is not None:
        _header(chart_path, _CHARTEVENTS)

    notes: list[str] = []
    tstats = _TimeStats({}, {})

    # ---- ICU stays ------------------------------------------------------------------------
    icu = _read_small(icu_path, _ICUSTAYS, chunksize)
    n_raw = len(icu)
    notes.append(f"ICUSTAYS: {n_raw} ICU stays read")
    _check_unique(icu, "ICUSTAY_ID", icu_path, "ICUSTAYS")
    icu["INTIME"] = _parse_times(
        icu["INTIME"],
        rows=icu["_ROW"].to_numpy(),
        path=icu_path,
        column="INTIME",
        anchor=None,
        rule="nearest",
        stats=tstats,
        table="ICUSTAYS",
    )
    missing_key = icu[["SUBJECT_ID", "HADM_ID", "ICUSTAY_ID"]].isna().any(axis=1)
    if missing_key.any():
        notes.append(
            f"excluded {int(missing_key.sum())} stays without SUBJECT_ID, HADM_ID or ICUSTAY_ID"
        )
        icu = icu.loc[~missing_key]
    first_intime = icu.groupby("SUBJECT_ID")["INTIME"].min()
    intime_by_hadm = icu.groupby("HADM_ID")["INTIME"].min()

    # ---- Admissions -----------------------------------------------------------------------
    adm = _read_small(adm_path, _ADMISSIONS, chunksize)
    _check_unique(adm, "HADM_ID", adm_path, "ADMISSIONS")
    _check_flag(adm, "HOSPITAL_EXPIRE_FLAG", adm_path, "ADMISSIONS")
    # Anchor: the admission's own first ICU INTIME, else the subject's first ICU INTIME.
    anchor = adm["HADM_ID"].map(intime_by_hadm).astype("datetime64[us]")
    anchor = anchor.fillna(adm["SUBJECT_ID"].map(first_intime).astype("datetime64[us]"))
    for col in ("ADMITTIME", "DISCHTIME"):
        adm[col] = _parse_times(
            adm[col],
            rows=adm["_ROW"].to_numpy(),
            path=adm_path,
            column=col,
            anchor=anchor,
            rule="nearest",
            stats=tstats,
            table="ADMISSIONS",
        )

    # ---- Patients -------------------------------------------------------------------------
    pat = _read_small(pat_path, _PATIENTS, chunksize)
    _check_unique(pat, "SUBJECT_ID", pat_path, "PATIENTS")
    pat["DOB"] = _parse_times(
        pat["DOB"],
        rows=pat["_ROW"].to_numpy(),
        path=pat_path,
        column="DOB",
        anchor=pat["SUBJECT_ID"].map(first_intime).astype("datetime64[us]"),
        rule="latest_not_after",
        stats=tstats,
        table="PATIENTS",
    )

    # ---- Cohort ---------------------------------------------------------------------------
    adm_cols = [
        "HADM_ID",
        "HOSPITAL_EXPIRE_FLAG",
        "ADMITTIME",
        "ADMISSION_TYPE",
        "ADMISSION_LOCATION",
        "INSURANCE",
        "MARITAL_STATUS",
        "ETHNICITY",
    ]
    stays = icu.drop(columns="_ROW").merge(
        adm[adm_cols], on="HADM_ID", how="left", indicator="_ADM"
    )
    no_adm = (stays["_ADM"] == "left_only").to_numpy()
    stays = stays.drop(columns="_ADM").merge(
        pat[["SUBJECT_ID", "GENDER", "DOB"]], on="SUBJECT_ID", how="left", indicator="_PAT"
    )
    no_pat = (stays["_PAT"] == "left_only").to_numpy() & ~no_adm
    stays = stays.drop(columns="_PAT")
    no_time = (stays["INTIME"].isna() | stays["DOB"].isna()).to_numpy() & ~no_adm & ~no_pat
    age = (stays["INTIME"] - stays["DOB"]).dt.total_seconds().to_numpy() / (365.2425 * 86_400)
    n_shifted = int(np.sum(age >= 90))
    age = np.where(age >= 90, AGE_90_PLUS, age)
    minor = ~no_adm & ~no_pat & ~no_time & (age < min_age)
    keep = ~(no_adm | no_pat | no_time | minor)
    for n, why in (
        (no_adm.sum(), "without an ADMISSIONS row"),
        (no_pat.sum(), "without a PATIENTS row"),
        (no_time.sum(), "with missing INTIME or DOB"),
        (minor.sum(), f"of patients younger than {min_age:g} at ICU admission"),
    ):
        if n:
            notes.append(f"excluded {int(n)} stays {why}")
    stays = stays.loc[keep].reset_index(drop=True)
    age = age[keep]
    n_rows = len(stays)
    if n_rows == 0:
        raise DataError(f"no ICU stay in {root} meets the cohort criteria (adults, with admission)")
    notes.append(
        f"cohort: {n_rows} ICU stays of {stays['SUBJECT_ID'].nunique()} patients "
        f"({stays['HADM_ID'].nunique()} admissions), age >= {min_age:g}"
    )
    if n_shifted:
        notes.append(
            f"{int(np.sum(age == AGE_90_PLUS))} cohort stays of patients aged 90+ "
            f"(DOB shifted by MIMIC-III) have age set to {AGE_90_PLUS}"
        )

    # ---- Labels ---------------------------------------------------------------------------
    hadm = stays["HADM_ID"].to_numpy()
    mortality = stays["HOSPITAL_EXPIRE_FLAG"].to_numpy(dtype=np.float64)
    readmission = _readmission(adm, hadm)
    los = stays["LOS"].to_numpy(dtype=np.float64)
    bad_los = ~(los > 0)
    los = np.where(bad_los, np.nan, los)
    labels = pd.DataFrame({"mortality": mortality, "readmission": readmission, "los": los})
    notes.append(
        f"mortality: {int(np.nansum(mortality))} of {int(np.isfinite(mortality).sum())} stays "
        f"died in hospital ({np.nanmean(mortality):.1%})"
    )
    n_readm = int(np.isfinite(readmission).sum())
    rate = f"{np.nanmean(readmission):.1%}" if n_readm else "n/a"
    notes.append(
        f"readmission (30 days): {int(np.nansum(readmission))} of {n_readm} survivor stays "
        f"({rate}); {n_rows - n_readm} stays of in-hospital deaths (or unknown outcome) set NaN"
    )
    notes.append(
        f"los: {int(bad_los.sum())} stays with missing or non-positive LOS set NaN; "
        f"median {np.nanmedian(los):.2f} days"
    )

    # ---- Static features ------------------------------------------------------------------
    feats = pd.DataFrame(index=pd.RangeIndex(n_rows))
    feats["age"] = age.astype(np.float64)
    feats["gender"] = _gender(stays["GENDER"])
    feats["ethnicity"] = _ethnicity_group(stays["ETHNICITY"])
    feats["admission_type"] = _clean_category(stays["ADMISSION_TYPE"])
    feats["admission_location"] = _clean_category(stays["ADMISSION_LOCATION"])
    feats["insurance"] = _clean_category(stays["INSURANCE"])
    feats["marital_status"] = _clean_category(stays["MARITAL_STATUS"])
    feats["first_careunit"] = _clean_category(stays["FIRST_CAREUNIT"])

    # ---- Labs and vitals (streamed) -------------------------------------------------------
    admit_by_hadm = adm.set_index("HADM_ID")["ADMITTIME"]
    labs, n_lab_rows = _stream_labs(
        lab_path, stays[["HADM_ID", "INTIME"]], admit_by_hadm, chunksize, tstats
    )
    notes.append(f"LABEVENTS: {n_lab_rows} lab values in the first 24 h used")
    if chart_path is not None:
        vitals, n_chart_rows, n_error = _stream_vitals(
            chart_path, stays[["ICUSTAY_ID", "INTIME"]], chunksize, tstats
        )
        notes.append(
            f"CHARTEVENTS: {n_chart_rows} vital-sign values in the first 24 h used"
            + (f" ({n_error} rows with ERROR = 1 ignored)" if n_error else "")
        )
    else:
        vitals = pd.DataFrame(
            {c: np.full(n_rows, np.nan) for c in _VITAL_COLUMNS}, index=pd.RangeIndex(n_rows)
        )
        notes.append(
            "CHARTEVENTS absent: the 15 vital-sign features are all missing (NaN) "
            "and left to imputation"
        )
    features = pd.concat([feats, labs, vitals], axis=1)[list(MIMIC3_FEATURES)]
    for col in NUMERIC_FEATURES:
        features[col] = features[col].astype(np.float64)

    for key, n in tstats.two_digit.items():
        lost = tstats.unresolved.get(key, 0)
        notes.append(
            f"{key}: {n} values written with two-digit years (M/D/YY); century restored "
            "from the patient's ICU stay times"
            + (f", {lost} left missing (patient without ICU stay)" if lost else "")
        )

    # ---- Keys -----------------------------------------------------------------------------
    _, patient = np.unique(stays["SUBJECT_ID"].to_numpy(dtype=np.int64), return_inverse=True)
    strata = feats["admission_location"].fillna("UNKNOWN").astype("str").rename("strata")

    return Cohort(
        dataset="mimic3",
        features=features,
        numeric_features=NUMERIC_FEATURES,
        categorical_features=CATEGORICAL_FEATURES,
        labels=labels,
        objectives=MIMIC3_OBJECTIVES,
        patient=patient.astype(np.int64),
        strata=strata,
        source_sha256=_sha256(icu_path),
        notes=tuple(notes),
        vocabularies=MIMIC3_VOCABULARIES,
    )
