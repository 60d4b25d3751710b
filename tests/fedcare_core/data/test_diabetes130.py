"""Tests of the Diabetes 130-US loader, on a synthetic fixture and (when present) the real file."""

from __future__ import annotations

import hashlib
import time
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedcare_core.data.cohort import Cohort
from fedcare_core.data.diabetes130 import (
    DIABETES130_COLUMNS,
    DIABETES130_CSV_SHA256,
    DIABETES130_FEATURES,
    DIABETES130_PARTITION,
    EXCLUDED_COLUMNS,
    MEDICATION_COLUMNS,
    find_diabetes130,
    icd9_group,
    load_diabetes130,
)
from fedcare_core.errors import ChecksumError, ConfigError, DataError

FIXTURE = Path(__file__).parent / "fixtures" / "diabetic_data_tiny.csv"
N_FIXTURE_ROWS = 40


def fixture_bytes() -> bytes:
    return FIXTURE.read_bytes()


def fixture_lines() -> list[str]:
    """Header + data lines of the fixture, without line endings."""
    return FIXTURE.read_text().splitlines()


def write_csv(path: Path, lines: list[str], *, final_newline: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "\r\n".join(lines) + ("\r\n" if final_newline else "")
    path.write_bytes(text.encode())
    return path


def set_field(lines: list[str], row: int, column: str, value: str) -> list[str]:
    """Copy of ``lines`` with data row ``row`` (1-based) holding ``value`` in ``column``."""
    out = list(lines)
    fields = out[row].split(",")
    fields[DIABETES130_COLUMNS.index(column)] = value
    out[row] = ",".join(fields)
    return out


def make_zip(path: Path, member: str, data: bytes, extra: dict[str, bytes] | None = None) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(member, data)
        for name, payload in (extra or {}).items():
            zf.writestr(name, payload)
    return path


def load_tiny(path: Path | str = FIXTURE, **kw: object) -> Cohort:
    return load_diabetes130(path, verify_checksum=False, **kw)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# Synthetic fixture: structure, features and labels
# ---------------------------------------------------------------------------------------------


def test_fixture_has_real_header() -> None:
    assert fixture_lines()[0].split(",") == list(DIABETES130_COLUMNS)
    assert len(DIABETES130_COLUMNS) == 50
    assert len(fixture_lines()) == N_FIXTURE_ROWS + 1


def test_cohort_shape_and_types() -> None:
    c = load_tiny()
    assert c.dataset == "diabetes130"
    assert c.n_rows == N_FIXTURE_ROWS
    assert list(c.features.columns) == list(DIABETES130_FEATURES)
    assert len(DIABETES130_FEATURES) == 46
    for col in EXCLUDED_COLUMNS:
        assert col not in c.features.columns
    assert set(c.numeric_features) == {
        "age",
        "num_lab_procedures",
        "num_procedures",
        "num_medications",
        "number_outpatient",
        "number_emergency",
        "number_inpatient",
        "number_diagnoses",
    }
    for col in c.numeric_features:
        assert c.features[col].dtype == np.float64, col
    for col in c.categorical_features:
        assert pd.api.types.is_string_dtype(c.features[col].dtype), col
    assert len(c.categorical_features) == 38
    assert [o.name for o in c.objectives] == ["early_discharge", "readmission", "los"]
    assert [o.kind for o in c.objectives] == ["binary", "binary", "regression"]
    assert list(c.labels.columns) == ["early_discharge", "readmission", "los"]
    assert all(c.labels[col].dtype == np.float64 for col in c.labels.columns)


def test_source_sha256_is_the_csv_digest() -> None:
    c = load_tiny()
    assert c.source_sha256 == hashlib.sha256(fixture_bytes()).hexdigest()
    assert any("does NOT match" in n for n in c.notes)


def test_hand_set_rows() -> None:
    c = load_tiny()
    f = c.features
    # Row 1: "[0-10)", weight "?", payer "?", diag 250.83 / ? / ?, codes 6 / 25 / 1.
    assert f.loc[0, "age"] == 5.0
    assert f["weight"].isna()[0]
    assert f["payer_code"].isna()[0]
    assert f.loc[0, "medical_specialty"] == "Pediatrics-Endocrinology"
    assert f.loc[0, "diag_1"] == "diabetes"
    assert f["diag_2"].isna()[0] and f["diag_3"].isna()[0]
    assert (f.loc[0, "admission_type_id"], f.loc[0, "discharge_disposition_id"]) == ("6", "25")
    assert f.loc[0, "admission_source_id"] == "1"
    assert f.loc[0, "A1Cresult"] == "None"
    assert f.loc[0, "max_glu_serum"] == "None"
    # Row 2: "[70-80)" → 75, V27 / E880 / 428, A1C ">8".
    assert f.loc[1, "age"] == 75.0
    assert list(f.loc[1, ["diag_1", "diag_2", "diag_3"]]) == ["other", "other", "circulatory"]
    assert f.loc[1, "A1Cresult"] == ">8"
    # Row 8: A1C "Norm", glucose ">300".
    assert (f.loc[7, "A1Cresult"], f.loc[7, "max_glu_serum"]) == ("Norm", ">300")


def test_none_is_a_category_and_question_mark_is_missing() -> None:
    c = load_tiny()
    a1c = c.features["A1Cresult"]
    assert a1c.notna().all()
    assert "None" in set(a1c)
    assert "None" in set(c.features["max_glu_serum"])
    raw = pd.read_csv(FIXTURE, dtype=str, keep_default_na=False)
    for col in ("race", "weight", "payer_code", "medical_specialty"):
        assert c.features[col].isna().sum() == (raw[col] == "?").sum(), col
    assert (c.features == "?").sum().sum() == 0


def test_labels() -> None:
    c = load_tiny()
    raw = pd.read_csv(FIXTURE, dtype=str, keep_default_na=False)
    tih = raw["time_in_hospital"].astype(int).to_numpy()
    np.testing.assert_array_equal(c.labels["early_discharge"], (tih <= 3).astype(float))
    np.testing.assert_array_equal(c.labels["los"], tih.astype(float))
    disp = raw["discharge_disposition_id"].astype(int)
    gone = disp.isin([11, 19, 20, 21, 13, 14]).to_numpy()
    assert gone.sum() == 2  # one expired (row 5), one hospice (row 10)
    assert c.labels["readmission"].isna().to_numpy().tolist() == gone.tolist()
    want = (raw["readmitted"] == "<30").astype(float).to_numpy()
    np.testing.assert_array_equal(c.labels["readmission"].to_numpy()[~gone], want[~gone])
    # Hand-set rows: 1 NO, 2 <30, 3 >30, 5 expired, 10 hospice with "<30".
    assert c.labels["readmission"].iloc[[0, 1, 2]].tolist() == [0.0, 1.0, 0.0]
    assert np.isnan(c.labels["readmission"].iloc[4]) and np.isnan(c.labels["readmission"].iloc[9])
    note = next(n for n in c.notes if "cannot be readmitted" in n)
    assert "2 encounters" in note and "expired (1" in note and "hospice (1" in note


def test_any_readmission_option() -> None:
    c = load_tiny(readmission="any")
    raw = pd.read_csv(FIXTURE, dtype=str, keep_default_na=False)
    want = (raw["readmitted"] != "NO").astype(float).to_numpy()
    got = c.labels["readmission"].to_numpy()
    keep = ~np.isnan(got)
    np.testing.assert_array_equal(got[keep], want[keep])
    assert c.labels["readmission"].isna().sum() == 2
    assert any("!= 'NO'" in n for n in c.notes)
    with pytest.raises(ConfigError):
        load_tiny(readmission="60d")


def test_patient_codes_and_strata() -> None:
    c = load_tiny()
    raw = pd.read_csv(FIXTURE, dtype=str, keep_default_na=False)
    nbr = raw["patient_nbr"].to_numpy()
    assert c.patient.dtype == np.int64
    assert len(np.unique(c.patient)) == len(np.unique(nbr)) == 33
    # Same patient_nbr ⇔ same code.
    for i in range(len(nbr)):
        for j in range(len(nbr)):
            assert (nbr[i] == nbr[j]) == (c.patient[i] == c.patient[j])
    assert (pd.Series(nbr).value_counts() >= 2).sum() >= 5
    assert c.strata is not None
    assert c.strata.tolist() == raw["admission_source_id"].tolist()


def test_icd9_group_boundaries() -> None:
    codes = {
        "390": "circulatory",
        "459.9": "circulatory",
        "785": "circulatory",
        "428": "circulatory",
        "460": "respiratory",
        "519": "respiratory",
        "786": "respiratory",
        "520": "digestive",
        "579": "digestive",
        "787": "digestive",
        "250": "diabetes",
        "250.01": "diabetes",
        "250.83": "diabetes",
        "249": "other",
        "251": "other",
        "800": "injury",
        "999": "injury",
        "710": "musculoskeletal",
        "739": "musculoskeletal",
        "580": "genitourinary",
        "629": "genitourinary",
        "788": "genitourinary",
        "140": "neoplasms",
        "239": "neoplasms",
        "240": "other",
        "8": "other",
        "789": "other",
        "V27": "other",
        "V45": "other",
        "E880": "other",
    }
    s = pd.Series([*codes, np.nan], dtype="str")
    got = icd9_group(s)
    assert got.iloc[:-1].tolist() == list(codes.values())
    assert pd.isna(got.iloc[-1])


def test_medication_columns_are_categorical() -> None:
    c = load_tiny()
    assert len(MEDICATION_COLUMNS) == 23
    for m in MEDICATION_COLUMNS:
        assert m in c.categorical_features
        assert set(c.features[m].dropna()) <= {"No", "Steady", "Up", "Down"}


def test_partition_matches_paper_split() -> None:
    p = DIABETES130_PARTITION
    assert len(p.common) == 20
    assert {k: len(v) for k, v in p.private.items()} == {
        "early_discharge": 9,
        "readmission": 9,
        "los": 8,
    }
    assert list(p.private) == ["early_discharge", "readmission", "los"]
    pools = [set(p.common), *(set(v) for v in p.private.values())]
    assert sum(len(s) for s in pools) == 46
    assert set().union(*pools) == set(DIABETES130_FEATURES)
    assert set(p.all_features) == set(DIABETES130_FEATURES)
    assert not set(p.all_features) & set(EXCLUDED_COLUMNS)
    for name in ("examide", "citoglipton", "metformin-rosiglitazone"):
        assert name in p.private["los"]
    assert p.disparity_ratio() == pytest.approx(9 / 29)


# ---------------------------------------------------------------------------------------------
# Finding the file: directory, zip, CSV path
# ---------------------------------------------------------------------------------------------


def test_load_via_dir_zip_and_csv_agree(tmp_path: Path) -> None:
    data = fixture_bytes()
    csv = tmp_path / "plain" / "nested" / "diabetic_data.csv"
    csv.parent.mkdir(parents=True)
    csv.write_bytes(data)
    zdir = tmp_path / "zipped"
    zdir.mkdir()
    zpath = make_zip(
        zdir / "dataset_diabetes.zip",
        "dataset_diabetes/diabetic_data.csv",
        data,
        {"dataset_diabetes/IDs_mapping.csv": b"admission_type_id,description\r\n1,Emergency\r\n"},
    )
    assert find_diabetes130(tmp_path / "plain") == csv
    assert find_diabetes130(zdir) == zpath
    cohorts = [load_tiny(tmp_path / "plain"), load_tiny(csv), load_tiny(zdir), load_tiny(zpath)]
    for c in cohorts[1:]:
        pd.testing.assert_frame_equal(c.features, cohorts[0].features)
        pd.testing.assert_frame_equal(c.labels, cohorts[0].labels)
        np.testing.assert_array_equal(c.patient, cohorts[0].patient)
        assert c.source_sha256 == cohorts[0].source_sha256
    # No file was extracted next to the archive.
    assert sorted(p.name for p in zdir.iterdir()) == ["dataset_diabetes.zip"]


def test_find_prefers_csv_over_zip(tmp_path: Path) -> None:
    make_zip(tmp_path / "a.zip", "diabetic_data.csv", fixture_bytes())
    csv = tmp_path / "deeper" / "diabetic_data.csv"
    csv.parent.mkdir()
    csv.write_bytes(fixture_bytes())
    assert find_diabetes130(tmp_path) == csv


def test_find_skips_unrelated_zips(tmp_path: Path) -> None:
    make_zip(tmp_path / "a_other.zip", "something.csv", b"x\n1\n")
    (tmp_path / "b_broken.zip").write_bytes(b"not a zip")
    good = make_zip(tmp_path / "c.zip", "x/y/diabetic_data.csv", fixture_bytes())
    assert find_diabetes130(tmp_path) == good


def test_find_nothing_names_directory(tmp_path: Path) -> None:
    (tmp_path / "readme.txt").write_text("hello")
    with pytest.raises(DataError) as ei:
        find_diabetes130(tmp_path)
    assert str(tmp_path) in str(ei.value)
    assert "diabetic_data.csv" in str(ei.value)


def test_find_missing_path(tmp_path: Path) -> None:
    with pytest.raises(DataError) as ei:
        load_diabetes130(tmp_path / "nope")
    assert str(tmp_path / "nope") in str(ei.value)


def test_zip_without_member(tmp_path: Path) -> None:
    z = make_zip(tmp_path / "x.zip", "other.csv", b"a\n1\n")
    with pytest.raises(DataError) as ei:
        load_diabetes130(z)
    assert str(z) in str(ei.value) and "diabetic_data.csv" in str(ei.value)


# ---------------------------------------------------------------------------------------------
# Checksum
# ---------------------------------------------------------------------------------------------


def test_checksum_mismatch(tmp_path: Path) -> None:
    csv = tmp_path / "diabetic_data.csv"
    csv.write_bytes(fixture_bytes())
    actual = hashlib.sha256(fixture_bytes()).hexdigest()
    with pytest.raises(ChecksumError) as ei:
        load_diabetes130(csv)
    msg = str(ei.value)
    assert str(csv) in msg
    assert DIABETES130_CSV_SHA256 in msg and actual in msg
    assert "--no-verify" in msg
    assert isinstance(ei.value, DataError)


def test_checksum_mismatch_in_zip_names_member(tmp_path: Path) -> None:
    z = make_zip(tmp_path / "d.zip", "inner/diabetic_data.csv", fixture_bytes())
    with pytest.raises(ChecksumError) as ei:
        load_diabetes130(z)
    assert f"{z}:inner/diabetic_data.csv" in str(ei.value)


# ---------------------------------------------------------------------------------------------
# Bad input: every failure is a DataError naming file, column and rows
# ---------------------------------------------------------------------------------------------


def test_empty_file(tmp_path: Path) -> None:
    csv = tmp_path / "diabetic_data.csv"
    csv.write_bytes(b"")
    with pytest.raises(DataError) as ei:
        load_tiny(csv)
    assert ei.value.file == str(csv)
    assert "empty" in str(ei.value)


def test_header_only(tmp_path: Path) -> None:
    csv = write_csv(tmp_path / "diabetic_data.csv", fixture_lines()[:1])
    with pytest.raises(DataError) as ei:
        load_tiny(csv)
    assert ei.value.file == str(csv)
    assert "no data rows" in str(ei.value)


def test_missing_column(tmp_path: Path) -> None:
    idx = DIABETES130_COLUMNS.index("weight")
    lines = [",".join(f for k, f in enumerate(ln.split(",")) if k != idx) for ln in fixture_lines()]
    csv = write_csv(tmp_path / "diabetic_data.csv", lines)
    with pytest.raises(DataError) as ei:
        load_tiny(csv)
    msg = str(ei.value)
    assert str(csv) in msg and "'weight'" in msg
    assert ei.value.column == "weight"
    assert "unexpected" not in msg


def test_renamed_column(tmp_path: Path) -> None:
    lines = fixture_lines()
    lines[0] = lines[0].replace("A1Cresult", "A1C_result")
    csv = write_csv(tmp_path / "diabetic_data.csv", lines)
    with pytest.raises(DataError) as ei:
        load_tiny(csv)
    msg = str(ei.value)
    assert "missing column(s): 'A1Cresult'" in msg
    assert "unexpected column(s): 'A1C_result'" in msg
    assert str(csv) in msg


def test_non_numeric_value(tmp_path: Path) -> None:
    lines = set_field(fixture_lines(), 3, "num_lab_procedures", "many")
    lines = set_field(lines, 7, "num_lab_procedures", "12a")
    csv = write_csv(tmp_path / "diabetic_data.csv", lines)
    with pytest.raises(DataError) as ei:
        load_tiny(csv)
    e = ei.value
    assert (e.file, e.column, e.rows) == (str(csv), "num_lab_procedures", (3, 7))
    assert "rows 3, 7" in str(e) and "non-numeric" in str(e)


def test_non_numeric_code_column(tmp_path: Path) -> None:
    csv = write_csv(
        tmp_path / "diabetic_data.csv",
        set_field(fixture_lines(), 12, "admission_source_id", "Emergency"),
    )
    with pytest.raises(DataError) as ei:
        load_tiny(csv)
    assert (ei.value.column, ei.value.rows) == ("admission_source_id", (12,))


def test_time_in_hospital_out_of_domain(tmp_path: Path) -> None:
    lines = set_field(fixture_lines(), 2, "time_in_hospital", "0")
    lines = set_field(lines, 5, "time_in_hospital", "15")
    lines = set_field(lines, 9, "time_in_hospital", "?")
    csv = write_csv(tmp_path / "diabetic_data.csv", lines)
    with pytest.raises(DataError) as ei:
        load_tiny(csv)
    e = ei.value
    assert (e.file, e.column, e.rows) == (str(csv), "time_in_hospital", (2, 5, 9))
    assert "1 to 14" in str(e)


def test_time_in_hospital_fraction(tmp_path: Path) -> None:
    csv = write_csv(
        tmp_path / "diabetic_data.csv",
        set_field(fixture_lines(), 4, "time_in_hospital", "2.5"),
    )
    with pytest.raises(DataError) as ei:
        load_tiny(csv)
    assert (ei.value.column, ei.value.rows) == ("time_in_hospital", (4,))


def test_readmitted_out_of_domain(tmp_path: Path) -> None:
    lines = set_field(fixture_lines(), 6, "readmitted", "YES")
    lines = set_field(lines, 11, "readmitted", "?")
    csv = write_csv(tmp_path / "diabetic_data.csv", lines)
    with pytest.raises(DataError) as ei:
        load_tiny(csv)
    e = ei.value
    assert (e.file, e.column, e.rows) == (str(csv), "readmitted", (6, 11))
    assert "NO, <30, >30" in str(e)


def test_bad_age(tmp_path: Path) -> None:
    csv = write_csv(tmp_path / "diabetic_data.csv", set_field(fixture_lines(), 8, "age", "70s"))
    with pytest.raises(DataError) as ei:
        load_tiny(csv)
    assert (ei.value.column, ei.value.rows) == ("age", (8,))


def test_missing_patient_nbr(tmp_path: Path) -> None:
    csv = write_csv(
        tmp_path / "diabetic_data.csv", set_field(fixture_lines(), 13, "patient_nbr", "?")
    )
    with pytest.raises(DataError) as ei:
        load_tiny(csv)
    assert (ei.value.column, ei.value.rows) == ("patient_nbr", (13,))


@pytest.mark.parametrize("cut", [20, 100, -3])
def test_truncated_file(tmp_path: Path, cut: int) -> None:
    """A download cut mid-row: the last row is short; the error names it and says truncated."""
    data = fixture_bytes()
    last_line_start = data.rstrip(b"\r\n").rfind(b"\n") + 1
    end = last_line_start + cut if cut > 0 else len(data) + cut
    csv = tmp_path / "diabetic_data.csv"
    csv.write_bytes(data[:end])
    with pytest.raises(DataError) as ei:
        load_tiny(csv)
    e = ei.value
    assert e.file == str(csv)
    assert e.rows == (N_FIXTURE_ROWS,)
    assert "truncated" in str(e)


def test_short_row_in_the_middle(tmp_path: Path) -> None:
    lines = fixture_lines()
    lines[17] = ",".join(lines[17].split(",")[:30])
    csv = write_csv(tmp_path / "diabetic_data.csv", lines)
    with pytest.raises(DataError) as ei:
        load_tiny(csv)
    assert ei.value.rows == (17,)
    assert "fewer than 50 fields" in str(ei.value)


def test_ragged_row_too_many_fields(tmp_path: Path) -> None:
    lines = fixture_lines()
    lines[9] += ",extra,fields"
    csv = write_csv(tmp_path / "diabetic_data.csv", lines)
    with pytest.raises(DataError) as ei:
        load_tiny(csv)
    assert ei.value.file == str(csv)
    assert "malformed CSV" in str(ei.value)


def test_truncated_zip(tmp_path: Path) -> None:
    full = make_zip(tmp_path / "full.zip", "d/diabetic_data.csv", fixture_bytes() * 20)
    raw = full.read_bytes()
    cut = tmp_path / "cut.zip"
    cut.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(DataError) as ei:
        load_tiny(cut)
    assert str(cut) in str(ei.value)


def test_corrupted_zip_member(tmp_path: Path) -> None:
    full = make_zip(tmp_path / "c.zip", "diabetic_data.csv", fixture_bytes())
    raw = bytearray(full.read_bytes())
    # Flip bytes inside the compressed data (after the 30-byte local header and the name).
    start = 30 + len("diabetic_data.csv") + 10
    for k in range(start, start + 40):
        raw[k] ^= 0xFF
    full.write_bytes(bytes(raw))
    with pytest.raises(DataError) as ei:
        load_tiny(full)
    assert str(full) in str(ei.value)


def test_not_utf8(tmp_path: Path) -> None:
    lines = set_field(fixture_lines(), 3, "medical_specialty", "PLACEHOLDER")
    data = write_csv(tmp_path / "x.csv", lines).read_bytes().replace(b"PLACEHOLDER", b"\xff\xfe")
    csv = tmp_path / "diabetic_data.csv"
    csv.write_bytes(data)
    with pytest.raises(DataError) as ei:
        load_tiny(csv)
    assert ei.value.file == str(csv)


def test_extra_column_is_ignored_and_noted(tmp_path: Path) -> None:
    lines = [ln + (",note" if k == 0 else ",x") for k, ln in enumerate(fixture_lines())]
    csv = write_csv(tmp_path / "diabetic_data.csv", lines)
    c = load_tiny(csv)
    assert "note" not in c.features.columns
    assert any("ignored unexpected column(s): note" in n for n in c.notes)


def test_empty_fields_are_missing(tmp_path: Path) -> None:
    csv = write_csv(tmp_path / "diabetic_data.csv", set_field(fixture_lines(), 3, "race", ""))
    c = load_tiny(csv)
    assert c.features["race"].isna()[2]


# ---------------------------------------------------------------------------------------------
# Real data (skipped when ../shared/datasets is absent)
# ---------------------------------------------------------------------------------------------

N_REAL = 101_766
N_PATIENTS = 71_518


@pytest.fixture(scope="module")
def real(data_dir: Path) -> Cohort:
    return load_diabetes130(data_dir)


@pytest.mark.realdata
def test_real_counts_and_checksum(real: Cohort) -> None:
    assert real.n_rows == N_REAL
    assert len(np.unique(real.patient)) == N_PATIENTS
    assert real.patient.min() == 0 and real.patient.max() == N_PATIENTS - 1
    assert real.source_sha256 == DIABETES130_CSV_SHA256
    assert real.features.shape == (N_REAL, 46)


@pytest.mark.realdata
def test_real_no_leakage_columns(real: Cohort) -> None:
    for col in EXCLUDED_COLUMNS:
        assert col not in real.features.columns
    assert set(real.features.columns) == set(DIABETES130_PARTITION.all_features)


@pytest.mark.realdata
def test_real_label_prevalence(real: Cohort) -> None:
    early = real.labels["early_discharge"]
    readm = real.labels["readmission"]
    assert early.notna().all()
    assert 0.45 < early.mean() < 0.52  # measured 0.4833
    assert readm.isna().sum() == 2_423  # 1,652 expired + 771 hospice
    assert 0.10 < readm.mean() < 0.125  # measured 0.1139
    los = real.labels["los"]
    assert los.min() == 1 and los.max() == 14
    assert 4.3 < los.mean() < 4.5  # measured 4.396


@pytest.mark.realdata
def test_real_categories(real: Cohort) -> None:
    f = real.features
    assert set(f["A1Cresult"]) == {"None", ">8", "Norm", ">7"}
    assert set(f["max_glu_serum"]) == {"None", "Norm", ">200", ">300"}
    assert (f["A1Cresult"] == "None").sum() == 84_748
    assert f["race"].isna().sum() == 2_273
    assert f["diag_1"].isna().sum() == 21
    assert f["diag_1"].value_counts().index[0] == "circulatory"
    assert set(f["age"]) == {5.0 + 10 * k for k in range(10)}
    assert real.strata is not None and real.strata.value_counts().index[0] == "7"


@pytest.mark.realdata
def test_real_any_readmission(data_dir: Path) -> None:
    c = load_diabetes130(data_dir, readmission="any")
    assert 0.45 < c.labels["readmission"].mean() < 0.49  # measured 0.4713


@pytest.mark.realdata
def test_real_load_via_zip_csv_and_dir(data_dir: Path, real: Cohort, tmp_path: Path) -> None:
    zpath = find_diabetes130(data_dir)
    assert zpath.suffix == ".zip"
    with zipfile.ZipFile(zpath) as zf:
        member = next(n for n in zf.namelist() if n.endswith("/diabetic_data.csv"))
        csv = tmp_path / "diabetic_data.csv"
        csv.write_bytes(zf.read(member))
    t0 = time.perf_counter()
    from_zip = load_diabetes130(zpath)
    elapsed = time.perf_counter() - t0
    assert elapsed < 3.0, f"loading took {elapsed:.2f} s"
    from_csv = load_diabetes130(csv)
    for c in (from_zip, from_csv):
        pd.testing.assert_frame_equal(c.features, real.features)
        pd.testing.assert_frame_equal(c.labels, real.labels)
        assert c.source_sha256 == DIABETES130_CSV_SHA256
