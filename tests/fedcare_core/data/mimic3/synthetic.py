"""Small synthetic MIMIC-III v1.4 tables with the full, real column schemas, for tests.

The tables are random but deterministic for a seed and shaped like the real release: ISO
``YYYY-MM-DD HH:MM:SS`` dates shifted into 2100-2200, DOBs shifted ~300 years back for patients
older than 89, several admissions per patient (some within 30 days), several ICU stays per
admission, CareVue and MetaVision item ids in CHARTEVENTS (Fahrenheit temperatures, GCS
components, ``ERROR = 1`` rows), LABEVENTS rows outside the ICU window, without ``HADM_ID`` or
with text-only values.

Use :func:`synthetic_mimic3_tables` to get the tables as DataFrames (to edit them in a test),
:func:`add_patient` / :func:`add_lab` / :func:`add_chart` to append hand-made rows, and
:func:`write_tables` (or :func:`write_synthetic_mimic3`) to write them as CSV files.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from tests.fedcare_core.data.mimic3.synthetic_schema import (
    ADMISSION_TYPE_VALUES,
    ADMISSIONS_COLUMNS,
    CAREUNIT_VALUES,
    CAREVUE_VITALS,
    CHARTEVENTS_COLUMNS,
    ETHNICITY_VALUES,
    GCS_COMPONENTS,
    ICUSTAYS_COLUMNS,
    INSURANCE_VALUES,
    INT_COLUMNS,
    LAB_ITEMS,
    LABEVENTS_COLUMNS,
    LOCATION_VALUES,
    MARITAL_VALUES,
    METAVISION_VITALS,
    PATIENTS_COLUMNS,
    SCHEMAS,
    fmt,
)

__all__ = [
    "ADMISSIONS_COLUMNS",
    "CHARTEVENTS_COLUMNS",
    "ICUSTAYS_COLUMNS",
    "LABEVENTS_COLUMNS",
    "PATIENTS_COLUMNS",
    "SCHEMAS",
    "Admission",
    "add_admission",
    "add_chart",
    "add_lab",
    "add_patient",
    "synthetic_mimic3_tables",
    "write_synthetic_mimic3",
    "write_tables",
]


@dataclass
class _Rows:
    """Row accumulators per table."""

    rows: dict[str, list[dict[str, object]]] = field(
        default_factory=lambda: {name: [] for name in SCHEMAS}
    )

    def add(self, table: str, **values: object) -> None:
        self.rows[table].append(values)

    def frames(self) -> dict[str, pd.DataFrame]:
        return {name: _frame(name, rows) for name, rows in self.rows.items()}


def _frame(table: str, rows: list[dict[str, object]]) -> pd.DataFrame:
    cols = SCHEMAS[table]
    df = pd.DataFrame(rows, columns=list(cols))
    df["ROW_ID"] = np.arange(1, len(df) + 1)
    for c in cols:
        if c in INT_COLUMNS:
            df[c] = pd.to_numeric(df[c]).astype("Int64")
    return df


def synthetic_mimic3_tables(
    *, n_patients: int = 30, seed: int = 0, with_chartevents: bool = True
) -> dict[str, pd.DataFrame]:
    """Build synthetic MIMIC-III tables (upper-case names and headers, full v1.4 schemas).

    Patient 0 is 15 years old at every ICU admission (excluded as a minor); patient 1 is older
    than 89 (DOB shifted ~300 years). Subject ids start at 1000, admissions at 100000 and ICU
    stays at 200000; row order is deterministic for a seed.
    """
    rng = np.random.default_rng(seed)
    acc = _Rows()
    hadm_id, icu_id = 100_000, 200_000
    for p in range(n_patients):
        subject = 1000 + p
        first = pd.Timestamp("2100-01-01") + pd.Timedelta(days=int(rng.integers(0, 36_000)))
        first += pd.Timedelta(minutes=int(rng.integers(0, 1440)))
        if p == 0:
            age = 15.0
        elif p == 1:
            age = 300.0 + rng.uniform(0, 5)
        else:
            age = float(rng.uniform(20, 88))
        years = int(age)
        dob = first - pd.DateOffset(years=years) - pd.Timedelta(days=(age - years) * 365.0)
        dob = dob.normalize()
        gender = "M" if rng.random() < 0.55 else "F"
        n_adm = int(rng.choice([1, 1, 2, 3]))
        admit = first
        died = False
        for a in range(n_adm):
            hadm_id += 1
            last = a == n_adm - 1
            expire = int(last and rng.random() < 0.3)
            died = bool(expire)
            n_icu = int(rng.choice([1, 1, 1, 2]))
            intime = admit + pd.Timedelta(hours=float(rng.uniform(0.2, 10)))
            stays = []
            for _ in range(n_icu):
                icu_id += 1
                los = float(np.round(rng.gamma(1.5, 2.0) + 0.1, 4))
                outtime = intime + pd.Timedelta(days=los)
                stays.append((icu_id, intime, outtime, los))
                intime = outtime + pd.Timedelta(hours=float(rng.uniform(5, 48)))
            disch = stays[-1][2] + pd.Timedelta(days=float(rng.uniform(0.5, 6)))
            add_admission(
                acc,
                subject=subject,
                hadm=hadm_id,
                admit=admit,
                disch=disch,
                expire=expire,
                rng=rng,
            )
            for k, (sid, t_in, t_out, los) in enumerate(stays):
                dbsource = "carevue" if (sid + k) % 2 == 0 else "metavision"
                _add_icustay(acc, subject, hadm_id, sid, dbsource, t_in, t_out, los, rng)
                _add_labs(acc, subject, hadm_id, t_in, rng)
                if with_chartevents:
                    _add_vitals(
                        acc,
                        subject,
                        hadm_id,
                        sid,
                        dbsource,
                        t_in,
                        np.random.default_rng([seed, sid]),
                    )
            # Some outpatient labs without HADM_ID, and next admission 3-60 days later.
            _lab_row(acc, subject, None, 50912, disch + pd.Timedelta(days=2), 1.1)
            admit = disch + pd.Timedelta(days=float(rng.choice([3, 12, 25, 45, 60])))
        dod = disch if died else None
        acc.add(
            "PATIENTS",
            SUBJECT_ID=subject,
            GENDER=gender,
            DOB=fmt(dob),
            DOD=fmt(dod.normalize()) if dod is not None else None,
            DOD_HOSP=fmt(dod.normalize()) if dod is not None else None,
            DOD_SSN=None,
            EXPIRE_FLAG=int(died),
        )
    tables = acc.frames()
    if not with_chartevents:
        del tables["CHARTEVENTS"]
    return tables


def add_admission(
    acc: _Rows,
    *,
    subject: int,
    hadm: int,
    admit: pd.Timestamp,
    disch: pd.Timestamp,
    expire: int,
    rng: np.random.Generator | None = None,
) -> None:
    """Append an ADMISSIONS row (discharge-time fields filled consistently with ``expire``)."""
    r = rng if rng is not None else np.random.default_rng(hadm)
    acc.add(
        "ADMISSIONS",
        SUBJECT_ID=subject,
        HADM_ID=hadm,
        ADMITTIME=fmt(admit),
        DISCHTIME=fmt(disch),
        DEATHTIME=fmt(disch) if expire else None,
        ADMISSION_TYPE=str(r.choice(ADMISSION_TYPE_VALUES)),
        ADMISSION_LOCATION=str(r.choice(LOCATION_VALUES)),
        DISCHARGE_LOCATION="DEAD/EXPIRED" if expire else "HOME",
        INSURANCE=str(r.choice(INSURANCE_VALUES)),
        LANGUAGE="ENGL",
        RELIGION="CATHOLIC",
        MARITAL_STATUS=MARITAL_VALUES[int(r.integers(len(MARITAL_VALUES)))],
        ETHNICITY=str(r.choice(ETHNICITY_VALUES)),
        EDREGTIME=fmt(admit - pd.Timedelta(hours=3)),
        EDOUTTIME=fmt(admit),
        DIAGNOSIS="SEPSIS",
        HOSPITAL_EXPIRE_FLAG=expire,
        HAS_CHARTEVENTS_DATA=1,
    )


def _add_icustay(
    acc: _Rows,
    subject: int,
    hadm: int,
    icustay: int,
    dbsource: str,
    intime: pd.Timestamp,
    outtime: pd.Timestamp,
    los: float | None,
    rng: np.random.Generator,
) -> None:
    unit = str(rng.choice(CAREUNIT_VALUES))
    ward = int(rng.integers(1, 60))
    acc.add(
        "ICUSTAYS",
        SUBJECT_ID=subject,
        HADM_ID=hadm,
        ICUSTAY_ID=icustay,
        DBSOURCE=dbsource,
        FIRST_CAREUNIT=unit,
        LAST_CAREUNIT=unit,
        FIRST_WARDID=ward,
        LAST_WARDID=ward,
        INTIME=fmt(intime),
        OUTTIME=fmt(outtime),
        LOS=los,
    )


def _lab_row(
    acc: _Rows,
    subject: int,
    hadm: int | None,
    itemid: int,
    time: pd.Timestamp,
    value: float | None,
    text: str | None = None,
) -> None:
    unit = LAB_ITEMS.get(itemid, ("", 0.0, 0.0))[0]
    acc.add(
        "LABEVENTS",
        SUBJECT_ID=subject,
        HADM_ID=hadm,
        ITEMID=itemid,
        CHARTTIME=fmt(time),
        VALUE=text if text is not None else (None if value is None else f"{value:g}"),
        VALUENUM=value,
        VALUEUOM=unit,
        FLAG=None,
    )


def _add_labs(
    acc: _Rows, subject: int, hadm: int, intime: pd.Timestamp, rng: np.random.Generator
) -> None:
    # Draws before the ICU (not used), in the first 24 h (used) and after it (not used).
    for offset_h in (-8.0, 1.0, 9.0, 20.0, 30.0, 50.0):
        t = intime + pd.Timedelta(hours=offset_h, minutes=int(rng.integers(0, 50)))
        for itemid, (_, mean, sd) in LAB_ITEMS.items():
            if rng.random() < 0.25:
                continue
            value = float(np.round(abs(rng.normal(mean, sd)) + 0.01, 2))
            _lab_row(acc, subject, hadm, itemid, t, value)
        # A text-only result (no VALUENUM), as urinalysis rows are.
        _lab_row(acc, subject, hadm, 51484, t, None, text="NEG")


def _chart_row(
    acc: _Rows,
    subject: int,
    hadm: int,
    icustay: int | None,
    itemid: int,
    time: pd.Timestamp,
    value: float,
    unit: str,
    *,
    error: int | None,
) -> None:
    acc.add(
        "CHARTEVENTS",
        SUBJECT_ID=subject,
        HADM_ID=hadm,
        ICUSTAY_ID=icustay,
        ITEMID=itemid,
        CHARTTIME=fmt(time),
        STORETIME=fmt(time + pd.Timedelta(minutes=7)),
        CGID=14000 + itemid % 97,
        VALUE=f"{value:g}",
        VALUENUM=value,
        VALUEUOM=unit,
        WARNING=0 if error is not None else None,
        ERROR=error,
        RESULTSTATUS="Manual" if error is None else None,
        STOPPED="NotStopd" if error is None else None,
    )


def _add_vitals(
    acc: _Rows,
    subject: int,
    hadm: int,
    icustay: int,
    dbsource: str,
    intime: pd.Timestamp,
    rng: np.random.Generator,
) -> None:
    metavision = dbsource == "metavision"
    items = METAVISION_VITALS if metavision else CAREVUE_VITALS
    error = 0 if metavision else None
    for hour in range(0, 36, 3):
        t = intime + pd.Timedelta(hours=hour, minutes=int(rng.integers(0, 30)))
        for itemid, (unit, mean, sd) in items.items():
            value = float(np.round(rng.normal(mean, sd), 1))
            if itemid == 198:
                value = float(np.clip(np.round(value), 3, 15))
            _chart_row(acc, subject, hadm, icustay, itemid, t, value, unit, error=error)
        if metavision and hour % 6 == 0:
            for itemid, top in zip(GCS_COMPONENTS, (4, 5, 6), strict=True):
                value = float(rng.integers(max(1, top - 2), top + 1))
                _chart_row(acc, subject, hadm, icustay, itemid, t, value, "", error=0)
        if metavision and hour == 6:
            # An erroneous heart rate, flagged ERROR = 1: must be ignored.
            _chart_row(acc, subject, hadm, icustay, 220045, t, 280.0, "bpm", error=1)
    # A row without ICUSTAY_ID (not attributable to a stay).
    _chart_row(
        acc, subject, hadm, None, 211, intime + pd.Timedelta(hours=1), 150.0, "bpm", error=None
    )


@dataclass(frozen=True)
class Admission:
    """A hand-made admission for :func:`add_patient`.

    ``stays`` lists ``(icustay_id, intime, los)``; ``los`` may be None (written empty).
    """

    hadm: int
    admit: str
    disch: str
    expire: int = 0
    stays: tuple[tuple[int, str, float | None], ...] = ()


def add_patient(
    tables: dict[str, pd.DataFrame],
    *,
    subject: int,
    dob: str,
    admissions: Sequence[Admission],
    gender: str = "F",
) -> None:
    """Append a hand-made patient with its admissions and ICU stays to ``tables`` (in place)."""
    acc = _Rows()
    rng = np.random.default_rng(subject)
    for adm in admissions:
        add_admission(
            acc,
            subject=subject,
            hadm=adm.hadm,
            admit=pd.Timestamp(adm.admit),
            disch=pd.Timestamp(adm.disch),
            expire=adm.expire,
        )
        for icustay, intime, los in adm.stays:
            t_in = pd.Timestamp(intime)
            out = t_in + pd.Timedelta(days=los if los is not None and los > 0 else 1.0)
            _add_icustay(acc, subject, adm.hadm, icustay, "carevue", t_in, out, los, rng)
    acc.add(
        "PATIENTS",
        SUBJECT_ID=subject,
        GENDER=gender,
        DOB=dob,
        DOD=None,
        DOD_HOSP=None,
        DOD_SSN=None,
        EXPIRE_FLAG=0,
    )
    _append(tables, acc)


def add_lab(
    tables: dict[str, pd.DataFrame],
    *,
    subject: int,
    hadm: int,
    itemid: int,
    charttime: pd.Timestamp,
    value: float,
) -> None:
    """Append one LABEVENTS row to ``tables`` (in place)."""
    acc = _Rows()
    _lab_row(acc, subject, hadm, itemid, charttime, value)
    _append(tables, acc)


def add_chart(
    tables: dict[str, pd.DataFrame],
    *,
    subject: int,
    hadm: int,
    icustay: int,
    itemid: int,
    charttime: pd.Timestamp,
    value: float,
    error: int | None = None,
) -> None:
    """Append one CHARTEVENTS row to ``tables`` (in place)."""
    acc = _Rows()
    _chart_row(acc, subject, hadm, icustay, itemid, charttime, value, "", error=error)
    _append(tables, acc)


def _append(tables: dict[str, pd.DataFrame], acc: _Rows) -> None:
    for name, new in acc.frames().items():
        if new.empty or name not in tables:
            continue
        both = pd.concat([tables[name], new], ignore_index=True)
        both["ROW_ID"] = np.arange(1, len(both) + 1)
        tables[name] = both


def write_tables(
    directory: str | Path,
    tables: dict[str, pd.DataFrame],
    *,
    lowercase: bool = False,
    gzip: bool = False,
) -> dict[str, Path]:
    """Write ``tables`` as ``NAME.csv`` (or ``.csv.gz``; lower-case names and headers if asked)."""
    out_dir = Path(directory)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    for name, df in tables.items():
        stem = name.lower() if lowercase else name
        path = out_dir / (f"{stem}.csv.gz" if gzip else f"{stem}.csv")
        frame = df.rename(columns=str.lower) if lowercase else df
        if gzip:
            frame.to_csv(path, index=False, compression={"method": "gzip", "mtime": 0})
        else:
            frame.to_csv(path, index=False)
        paths[name] = path
    return paths


def write_synthetic_mimic3(
    directory: str | Path,
    *,
    n_patients: int = 30,
    seed: int = 0,
    lowercase: bool = False,
    gzip: bool = False,
    with_chartevents: bool = True,
) -> dict[str, Path]:
    """Write synthetic MIMIC-III tables to ``directory``; return table name → file path."""
    tables = synthetic_mimic3_tables(
        n_patients=n_patients, seed=seed, with_chartevents=with_chartevents
    )
    return write_tables(directory, tables, lowercase=lowercase, gzip=gzip)
