"""Tests of the MIMIC-III loader (demo data and synthetic full-schema tables)."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedcare_core.data.cohort import Cohort
from fedcare_core.data.mimic3 import (
    CATEGORICAL_FEATURES,
    MIMIC3_FEATURES,
    MIMIC3_PARTITION,
    NUMERIC_FEATURES,
    load_mimic3,
)
from fedcare_core.errors import DataError
from tests.fedcare_core.data.mimic3_synthetic import (
    CHARTEVENTS_COLUMNS,
    ICUSTAYS_COLUMNS,
    LABEVENTS_COLUMNS,
    Admission,
    add_chart,
    add_lab,
    add_patient,
    synthetic_mimic3_tables,
    write_synthetic_mimic3,
    write_tables,
)

VITALS = [c for c in NUMERIC_FEATURES if c.split("_")[0] in {"hr", "sbp", "dbp", "mbp", "rr"}]
VITALS += [c for c in NUMERIC_FEATURES if c.split("_")[0] in {"temp", "spo2", "gcs"}]
ID_WORDS = ("subject", "hadm", "icustay", "row_id", "itemid")


def assert_same_cohort(a: Cohort, b: Cohort) -> None:
    pd.testing.assert_frame_equal(a.features, b.features, check_exact=True)
    pd.testing.assert_frame_equal(a.labels, b.labels, check_exact=True)
    np.testing.assert_array_equal(a.patient, b.patient)
    assert a.strata is not None and b.strata is not None
    pd.testing.assert_series_equal(a.strata, b.strata)


def stay(tables: dict[str, pd.DataFrame], icustay: int) -> pd.Series:
    icu = tables["ICUSTAYS"]
    return icu.loc[icu["ICUSTAY_ID"] == icustay].iloc[0]


def row_of(cohort: Cohort, tables: dict[str, pd.DataFrame], icustay: int) -> int:
    """Cohort row of an ICU stay (the loader keeps ICUSTAYS order, minus excluded stays)."""
    kept = tables["ICUSTAYS"]["SUBJECT_ID"] != 1000  # patient 0 is a minor
    ids = tables["ICUSTAYS"].loc[kept, "ICUSTAY_ID"].tolist()
    assert len(ids) == cohort.n_rows
    return ids.index(icustay)


@pytest.fixture(scope="module")
def synth_tables() -> dict[str, pd.DataFrame]:
    return synthetic_mimic3_tables(n_patients=30, seed=0)


@pytest.fixture(scope="module")
def synth_cohort(tmp_path_factory: pytest.TempPathFactory) -> Cohort:
    d = tmp_path_factory.mktemp("mimic_upper")
    write_synthetic_mimic3(d, n_patients=30, seed=0)
    return load_mimic3(d)


# ---------------------------------------------------------------------------------------------
# Feature set and partition
# ---------------------------------------------------------------------------------------------


def test_feature_set_and_partition() -> None:
    assert len(MIMIC3_FEATURES) == 46 == len(set(MIMIC3_FEATURES))
    assert set(NUMERIC_FEATURES) | set(CATEGORICAL_FEATURES) == set(MIMIC3_FEATURES)
    assert not set(NUMERIC_FEATURES) & set(CATEGORICAL_FEATURES)
    p = MIMIC3_PARTITION
    assert len(p.common) == 19
    assert list(p.private) == ["mortality", "readmission", "los"]
    pools = [set(v) for v in p.private.values()]
    assert all(len(pool) == 9 for pool in pools)
    everything = [*p.common, *(f for v in p.private.values() for f in v)]
    assert len(everything) == len(set(everything)) == 46  # disjoint
    assert set(everything) == set(MIMIC3_FEATURES)
    assert p.disparity_ratio() == pytest.approx(9 / 28)
    # Every pool keeps lab features, so it stays informative without CHARTEVENTS.
    for pool in pools:
        assert len(pool - set(VITALS)) >= 3


# ---------------------------------------------------------------------------------------------
# Demo data
# ---------------------------------------------------------------------------------------------


@pytest.mark.realdata
def test_demo_loads(data_dir: Path) -> None:
    demo = data_dir / "mimic3-demo"
    t0 = time.perf_counter()
    c = load_mimic3(demo)
    elapsed = time.perf_counter() - t0
    assert elapsed < 15
    assert c.dataset == "mimic3"
    assert [o.name for o in c.objectives] == ["mortality", "readmission", "los"]
    assert [o.kind for o in c.objectives] == ["binary", "binary", "regression"]
    assert "ICUSTAYS: 136 ICU stays read" in c.notes
    assert c.n_rows == 135  # one stay of a 17-year-old excluded
    assert "excluded 1 stays of patients younger than 18 at ICU admission" in c.notes
    assert list(c.features.columns) == list(MIMIC3_FEATURES)
    assert not any(w in col.lower() for col in c.features.columns for w in ID_WORDS)
    assert all(c.features[f].dtype == np.float64 for f in c.numeric_features)
    assert all(pd.api.types.is_string_dtype(c.features[f]) for f in c.categorical_features)
    # Ages are plausible: two-digit-year dates in the demo's ADMISSIONS/PATIENTS resolved.
    assert c.features["age"].between(18, 91.4).all()
    assert c.features["age"].median() > 50
    # Labels.
    mort, readm, los = (c.labels[n] for n in ("mortality", "readmission", "los"))
    assert set(mort.unique()) == {0.0, 1.0}
    assert 0.1 < mort.mean() < 0.6
    assert readm[mort == 1].isna().all() and readm[mort == 0].notna().all()
    assert 0.02 < readm.mean() < 0.4
    assert (los.dropna() > 0).all() and 1 < los.median() < 10
    # No CHARTEVENTS in the demo: vitals exist as all-NaN floats, labs mostly present.
    assert c.features[VITALS].isna().all().all()
    assert any("CHARTEVENTS absent" in n for n in c.notes)
    assert c.features["creatinine_mean"].notna().mean() > 0.8
    # Keys and provenance.
    assert len(np.unique(c.patient)) == 99
    assert c.strata is not None and c.strata.notna().all()
    sums = dict(
        line.split()[::-1] for line in (demo / "SHA256SUMS").read_text().splitlines() if line
    )
    assert c.source_sha256 == sums["ICUSTAYS.csv"]


# ---------------------------------------------------------------------------------------------
# Synthetic full-schema tables
# ---------------------------------------------------------------------------------------------


def test_synthetic_schema_is_full(tmp_path: Path) -> None:
    paths = write_synthetic_mimic3(tmp_path, n_patients=3)
    header = pd.read_csv(paths["CHARTEVENTS"], nrows=0).columns.tolist()
    assert header == list(CHARTEVENTS_COLUMNS)
    assert pd.read_csv(paths["LABEVENTS"], nrows=0).columns.tolist() == list(LABEVENTS_COLUMNS)
    assert pd.read_csv(paths["ICUSTAYS"], nrows=0).columns.tolist() == list(ICUSTAYS_COLUMNS)


def test_synthetic_with_chartevents(synth_cohort: Cohort, synth_tables: dict) -> None:
    c = synth_cohort
    assert c.n_rows == len(synth_tables["ICUSTAYS"]) - 1  # the minor is excluded
    assert any("younger than 18" in n for n in c.notes)
    assert list(c.features.columns) == list(MIMIC3_FEATURES)
    vitals = c.features[VITALS].to_numpy()
    assert np.isfinite(vitals).all()
    # Fahrenheit temperatures converted, GCS totals in range, ERROR = 1 rows (HR 280) and rows
    # without ICUSTAY_ID (HR 150) ignored.
    assert c.features["temp_mean"].between(35, 39).all()
    assert c.features["gcs_min"].between(3, 15).all()
    assert c.features["hr_max"].max() < 150
    assert any("ERROR = 1" in n for n in c.notes)
    # The shifted DOB (patient 1, "300 years old") gets age 91.4.
    assert (c.features["age"] == 91.4).sum() >= 1
    assert c.features["age"].max() == 91.4
    # Readmission is NaN exactly for in-hospital deaths.
    mort, readm = c.labels["mortality"], c.labels["readmission"]
    assert readm.isna().equals(mort == 1)
    assert 0 < np.nanmean(readm) < 1
    assert c.strata is not None and c.strata.notna().all()
    assert c.patient.dtype == np.int64 and c.patient.min() == 0
    assert len(np.unique(c.patient)) == 29


def test_min_age_option(tmp_path: Path) -> None:
    write_synthetic_mimic3(tmp_path, n_patients=4, with_chartevents=False)
    adults = load_mimic3(tmp_path)
    everyone = load_mimic3(tmp_path, min_age=0)
    assert everyone.n_rows > adults.n_rows
    assert everyone.features["age"].min() == pytest.approx(15, abs=0.1)


def test_lowercase_gzip_identical(tmp_path: Path, synth_cohort: Cohort) -> None:
    paths = write_synthetic_mimic3(tmp_path, n_patients=30, seed=0, lowercase=True, gzip=True)
    assert paths["ICUSTAYS"].name == "icustays.csv.gz"
    assert pd.read_csv(paths["ICUSTAYS"], nrows=0).columns[0] == "row_id"
    c = load_mimic3(tmp_path)
    assert_same_cohort(c, synth_cohort)
    assert c.notes == synth_cohort.notes
    assert c.source_sha256 == hashlib.sha256(paths["ICUSTAYS"].read_bytes()).hexdigest()


def test_chunksize_does_not_matter(tmp_path: Path) -> None:
    write_synthetic_mimic3(tmp_path, n_patients=5, seed=3)
    small = load_mimic3(tmp_path, chunksize=7)
    large = load_mimic3(tmp_path, chunksize=10_000_000)
    assert_same_cohort(small, large)
    assert small.notes == large.notes
    assert np.isfinite(small.features[VITALS].to_numpy()).all()


def test_without_chartevents(tmp_path: Path, synth_cohort: Cohort) -> None:
    write_synthetic_mimic3(tmp_path, n_patients=30, seed=0, with_chartevents=False)
    c = load_mimic3(tmp_path)
    assert list(c.features.columns) == list(MIMIC3_FEATURES)
    assert all(c.features[v].dtype == np.float64 for v in VITALS)
    assert c.features[VITALS].isna().all().all()
    assert any("CHARTEVENTS absent" in n for n in c.notes)
    others = [f for f in MIMIC3_FEATURES if f not in VITALS]
    pd.testing.assert_frame_equal(c.features[others], synth_cohort.features[others])
    pd.testing.assert_frame_equal(c.labels, synth_cohort.labels)


def test_chartevents_without_error_column(tmp_path: Path, synth_tables: dict) -> None:
    tables = {k: v.copy() for k, v in synth_tables.items()}
    ce = tables["CHARTEVENTS"]
    tables["CHARTEVENTS"] = ce.loc[ce["ERROR"].fillna(0) != 1].drop(columns="ERROR")
    write_tables(tmp_path, tables)
    c = load_mimic3(tmp_path)
    assert np.isfinite(c.features[VITALS].to_numpy()).all()


def test_two_digit_year_dates_are_resolved(
    tmp_path: Path, synth_tables: dict, synth_cohort: Cohort
) -> None:
    """ADMISSIONS/PATIENTS written as M/D/YY H:MM (a spreadsheet round trip, as in the demo)."""

    def us(text: object) -> object:
        if not isinstance(text, str):
            return text
        t = pd.Timestamp(text)
        if t.year < 1900:  # spreadsheets leave pre-1900 dates as text
            return text
        return f"{t.month}/{t.day}/{t.year % 100:02d} {t.hour}:{t.minute:02d}"

    tables = {k: v.copy() for k, v in synth_tables.items()}
    for col in ("ADMITTIME", "DISCHTIME", "DEATHTIME", "EDREGTIME", "EDOUTTIME"):
        tables["ADMISSIONS"][col] = tables["ADMISSIONS"][col].map(us)
    for col in ("DOB", "DOD", "DOD_HOSP"):
        tables["PATIENTS"][col] = tables["PATIENTS"][col].map(us)
    write_tables(tmp_path, tables)
    c = load_mimic3(tmp_path)
    assert_same_cohort(c, synth_cohort)
    assert any("two-digit years" in n for n in c.notes)


# ---------------------------------------------------------------------------------------------
# Leakage and labels on hand-made rows
# ---------------------------------------------------------------------------------------------


def test_no_leakage_from_after_24h(tmp_path: Path, synth_tables: dict) -> None:
    # Patient 2's first stay: a CareVue or MetaVision stay of an adult.
    icu = synth_tables["ICUSTAYS"]
    target = icu.loc[icu["SUBJECT_ID"] == 1002].iloc[0]
    icustay, hadm = int(target["ICUSTAY_ID"]), int(target["HADM_ID"])
    intime = pd.Timestamp(target["INTIME"])
    write_tables(tmp_path / "base", synth_tables)
    base = load_mimic3(tmp_path / "base")
    row = row_of(base, synth_tables, icustay)

    late = {k: v.copy() for k, v in synth_tables.items()}
    add_lab(
        late,
        subject=1002,
        hadm=hadm,
        itemid=50912,
        charttime=intime + pd.Timedelta(hours=30),
        value=42.0,
    )
    add_lab(
        late,
        subject=1002,
        hadm=hadm,
        itemid=50912,
        charttime=intime - pd.Timedelta(hours=2),
        value=43.0,
    )
    add_chart(
        late,
        subject=1002,
        hadm=hadm,
        icustay=icustay,
        itemid=211,
        charttime=intime + pd.Timedelta(hours=30),
        value=190.0,
    )
    write_tables(tmp_path / "late", late)
    after = load_mimic3(tmp_path / "late")
    pd.testing.assert_frame_equal(after.features, base.features, check_exact=True)

    early = {k: v.copy() for k, v in synth_tables.items()}
    add_lab(
        early,
        subject=1002,
        hadm=hadm,
        itemid=50912,
        charttime=intime + pd.Timedelta(hours=2),
        value=42.0,
    )
    add_chart(
        early,
        subject=1002,
        hadm=hadm,
        icustay=icustay,
        itemid=211,
        charttime=intime + pd.Timedelta(hours=2),
        value=190.0,
    )
    write_tables(tmp_path / "early", early)
    within = load_mimic3(tmp_path / "early")
    assert within.features.loc[row, "creatinine_max"] == 42.0
    assert within.features.loc[row, "hr_max"] == 190.0
    changed = (
        within.features.drop(index=row) != base.features.drop(index=row)
    ) & base.features.drop(index=row).notna()
    assert not changed.any().any()  # other stays untouched
    pd.testing.assert_frame_equal(within.labels, base.labels)


def _constructed(tmp_path: Path) -> tuple[Cohort, dict[str, pd.DataFrame]]:
    tables = synthetic_mimic3_tables(n_patients=3, seed=1, with_chartevents=False)
    # A: readmitted 10 days after discharge (the second admission has no ICU stay).
    add_patient(
        tables,
        subject=9001,
        dob="2090-01-01 00:00:00",
        admissions=[
            Admission(
                hadm=900101,
                admit="2150-03-01 10:00:00",
                disch="2150-03-10 12:00:00",
                stays=((990101, "2150-03-01 12:00:00", 2.5),),
            ),
            Admission(hadm=900102, admit="2150-03-20 12:00:00", disch="2150-03-25 12:00:00"),
        ],
    )
    # B: next admission 40 days after discharge; that admission's own stay has LOS 0.
    add_patient(
        tables,
        subject=9002,
        dob="2100-06-01 00:00:00",
        admissions=[
            Admission(
                hadm=900201,
                admit="2160-01-01 08:00:00",
                disch="2160-01-05 08:00:00",
                stays=((990201, "2160-01-01 09:00:00", 1.5),),
            ),
            Admission(
                hadm=900202,
                admit="2160-02-14 08:00:00",
                disch="2160-02-20 08:00:00",
                stays=((990202, "2160-02-14 10:00:00", 0.0),),
            ),
        ],
    )
    # C: died in hospital; a later admission record must not make it a readmission.
    add_patient(
        tables,
        subject=9003,
        dob="2110-06-01 00:00:00",
        admissions=[
            Admission(
                hadm=900301,
                admit="2170-05-01 08:00:00",
                disch="2170-05-09 08:00:00",
                expire=1,
                stays=((990301, "2170-05-01 09:00:00", None),),
            ),
        ],
    )
    write_tables(tmp_path, tables)
    return load_mimic3(tmp_path), tables


def test_readmission_and_los_labels_hand_checked(tmp_path: Path) -> None:
    c, tables = _constructed(tmp_path)
    ids = tables["ICUSTAYS"]["ICUSTAY_ID"].tolist()
    ages = c.features["age"].to_numpy()
    assert len(ids) == c.n_rows + 1  # the minor (patient 0) is excluded
    order = [
        i
        for i in ids
        if i
        not in tables["ICUSTAYS"]
        .loc[tables["ICUSTAYS"]["SUBJECT_ID"] == 1000, "ICUSTAY_ID"]
        .tolist()
    ]

    def lab(icustay: int, name: str) -> float:
        return float(c.labels.loc[order.index(icustay), name])

    assert lab(990101, "readmission") == 1.0  # 10 days after discharge
    assert lab(990201, "readmission") == 0.0  # 40 days after discharge
    assert lab(990202, "readmission") == 0.0  # last admission
    assert np.isnan(lab(990301, "readmission"))  # died
    assert lab(990301, "mortality") == 1.0 and lab(990101, "mortality") == 0.0
    assert lab(990101, "los") == 2.5
    assert np.isnan(lab(990202, "los"))  # LOS 0: out of the LOS objective, still in the cohort
    assert np.isnan(lab(990301, "los"))  # LOS missing
    assert ages[order.index(990101)] == pytest.approx(60.16, abs=0.01)
    assert any("2 stays with missing or non-positive LOS" in n for n in c.notes)


def test_readmission_window_edges(tmp_path: Path) -> None:
    tables = synthetic_mimic3_tables(n_patients=2, seed=2, with_chartevents=False)
    disch = pd.Timestamp("2150-03-10 12:00:00")
    for k, gap in enumerate([pd.Timedelta(days=30), pd.Timedelta(days=30, minutes=1)]):
        nxt = disch + gap
        add_patient(
            tables,
            subject=9100 + k,
            dob="2090-01-01 00:00:00",
            admissions=[
                Admission(
                    hadm=910000 + 10 * k,
                    admit="2150-03-01 10:00:00",
                    disch=str(disch),
                    stays=((991000 + 10 * k, "2150-03-01 12:00:00", 2.0),),
                ),
                Admission(
                    hadm=910001 + 10 * k, admit=str(nxt), disch=str(nxt + pd.Timedelta(days=3))
                ),
            ],
        )
    write_tables(tmp_path, tables)
    c = load_mimic3(tmp_path)
    assert c.labels["readmission"].iloc[-2] == 1.0  # exactly 30 days: readmitted
    assert c.labels["readmission"].iloc[-1] == 0.0  # 30 days and a minute: not


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def synth_dir(tmp_path: Path) -> Path:
    write_synthetic_mimic3(tmp_path, n_patients=4, seed=5)
    return tmp_path


def test_error_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="does not exist"):
        load_mimic3(tmp_path / "nowhere")


def test_error_missing_table(synth_dir: Path) -> None:
    (synth_dir / "LABEVENTS.csv").unlink()
    with pytest.raises(DataError) as err:
        load_mimic3(synth_dir)
    msg = str(err.value)
    assert "LABEVENTS" in msg and str(synth_dir) in msg
    assert "ADMISSIONS.csv" in msg and "ICUSTAYS.csv" in msg  # what was found


def test_error_missing_column(synth_dir: Path) -> None:
    path = synth_dir / "ICUSTAYS.csv"
    pd.read_csv(path).drop(columns="LOS").to_csv(path, index=False)
    with pytest.raises(DataError) as err:
        load_mimic3(synth_dir)
    assert err.value.column == "LOS" and err.value.file == str(path)
    assert "'LOS'" in str(err.value) and str(path) in str(err.value)


def test_error_missing_column_in_chartevents(synth_dir: Path) -> None:
    path = synth_dir / "CHARTEVENTS.csv"
    pd.read_csv(path).drop(columns="VALUENUM").to_csv(path, index=False)
    with pytest.raises(DataError) as err:
        load_mimic3(synth_dir)
    assert err.value.column == "VALUENUM" and "CHARTEVENTS.csv" in str(err.value)


def test_error_non_numeric_los(synth_dir: Path) -> None:
    path = synth_dir / "ICUSTAYS.csv"
    df = pd.read_csv(path, dtype=str)
    df.loc[2, "LOS"] = "abc"
    df.loc[4, "LOS"] = "n/a?"
    df.to_csv(path, index=False)
    with pytest.raises(DataError) as err:
        load_mimic3(synth_dir, chunksize=2)
    msg = str(err.value)
    assert err.value.rows == (3, 5)
    assert str(path) in msg and "'LOS'" in msg and "rows 3, 5" in msg and "'abc'" in msg


@pytest.mark.parametrize("lowercase", [False, True])
def test_error_non_numeric_valuenum(tmp_path: Path, lowercase: bool) -> None:
    paths = write_synthetic_mimic3(tmp_path, n_patients=4, seed=5, lowercase=lowercase)
    path = paths["LABEVENTS"]
    df = pd.read_csv(path, dtype=str)
    col = "valuenum" if lowercase else "VALUENUM"
    df.loc[100, col] = "1.2.3"
    df.to_csv(path, index=False)
    with pytest.raises(DataError) as err:
        load_mimic3(tmp_path, chunksize=33)
    assert err.value.column == "VALUENUM" and err.value.rows == (101,)
    assert str(path) in str(err.value) and "row 101" in str(err.value)


def test_error_empty_file(synth_dir: Path) -> None:
    path = synth_dir / "ADMISSIONS.csv"
    path.write_text("")
    with pytest.raises(DataError) as err:
        load_mimic3(synth_dir)
    assert str(path) in str(err.value) and "empty" in str(err.value)


def test_error_header_only_file(synth_dir: Path) -> None:
    path = synth_dir / "ICUSTAYS.csv"
    path.write_text(",".join(ICUSTAYS_COLUMNS) + "\n")
    with pytest.raises(DataError) as err:
        load_mimic3(synth_dir)
    assert str(path) in str(err.value) and "no data rows" in str(err.value)


def test_error_bad_date(synth_dir: Path) -> None:
    path = synth_dir / "ICUSTAYS.csv"
    df = pd.read_csv(path, dtype=str)
    df.loc[1, "INTIME"] = "yesterday"
    df.to_csv(path, index=False)
    with pytest.raises(DataError) as err:
        load_mimic3(synth_dir)
    assert err.value.column == "INTIME" and err.value.rows == (2,)
    assert str(path) in str(err.value)


def test_error_ambiguous_table_files(synth_dir: Path) -> None:
    (synth_dir / "patients.csv.gz").write_bytes((synth_dir / "PATIENTS.csv").read_bytes())
    with pytest.raises(DataError, match="PATIENTS"):
        load_mimic3(synth_dir)


def test_gcs_components_and_fahrenheit(tmp_path: Path, synth_tables: dict) -> None:
    icu = synth_tables["ICUSTAYS"]
    target = icu.loc[icu["SUBJECT_ID"] == 1003].iloc[0]
    icustay, hadm = int(target["ICUSTAY_ID"]), int(target["HADM_ID"])
    intime = pd.Timestamp(target["INTIME"])
    tables = {k: v.copy() for k, v in synth_tables.items()}
    kw = {"subject": 1003, "hadm": hadm, "icustay": icustay}
    one_h, late = intime + pd.Timedelta(hours=1), intime + pd.Timedelta(hours=30)
    for itemid in (220739, 223900, 223901):  # eye 1 + verbal 1 + motor 1 at +1 h: GCS 3
        add_chart(tables, **kw, itemid=itemid, charttime=one_h, value=1.0, error=0)
    for itemid in (220739, 223901):  # incomplete set: no total
        add_chart(tables, **kw, itemid=itemid, charttime=one_h + pd.Timedelta(hours=1), value=1.0)
    add_chart(tables, **kw, itemid=678, charttime=one_h, value=104.0)  # 40 degrees C
    add_chart(tables, **kw, itemid=678, charttime=one_h, value=212.0)  # implausible: ignored
    add_chart(tables, **kw, itemid=223762, charttime=late, value=42.0)  # after 24 h: ignored
    write_tables(tmp_path, tables)
    c = load_mimic3(tmp_path)
    row = row_of(c, tables, icustay)
    assert c.features.loc[row, "gcs_min"] == 3.0
    assert c.features.loc[row, "temp_max"] == pytest.approx(40.0)
