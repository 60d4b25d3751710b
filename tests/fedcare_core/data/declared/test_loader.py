"""Loading a declared dataset: the example extract's cohort, and every bad file's DataError.

The extract is drawn by the example's seeded generator into pytest's temporary folders; a bad
file is a small extract with one fault, refused naming the file, the column and the 1-based
rows, never the value.
"""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedcare_core.data.cohort import Cohort
from fedcare_core.data.declared import read_definition
from fedcare_core.data.declared.loader import load_declared
from fedcare_core.data.declared.model import DatasetDeclaration
from fedcare_core.errors import ChecksumError, DataError
from tests.fedcare_core.data.declared.helpers import (
    EXAMPLE_DEFINITION,
    SMALL_DEFINITION,
    SMALL_ROWS,
    example_definition_copy,
    example_extract,
    write,
)

N_ROWS = 2_000
#: The example's diagnosis groups by prefix (the definition's map, written out again here).
DX_GROUPS = {
    "A": "infectious", "B": "infectious", "C": "neoplasms", "E": "endocrine", "F": "mental",
    "G": "nervous", "I": "circulatory", "J": "respiratory", "K": "digestive",
    "M": "musculoskeletal", "N": "genitourinary", "R": "symptoms", "S": "injury", "T": "injury",
    "Z": "encounter_reason",
}  # fmt: skip


def _dx_group(code: str) -> str:
    if code[0] == "D":
        return "neoplasms" if code[1] in "01234" else "blood"
    return DX_GROUPS.get(code[0], "other")


@pytest.fixture(scope="module")
def extract() -> pd.DataFrame:
    return example_extract(N_ROWS, seed=11)


@pytest.fixture(scope="module")
def example() -> DatasetDeclaration:
    return read_definition(EXAMPLE_DEFINITION)


@pytest.fixture(scope="module")
def loaded(
    extract: pd.DataFrame, example: DatasetDeclaration, tmp_path_factory: pytest.TempPathFactory
) -> Cohort:
    folder = tmp_path_factory.mktemp("riverside")
    extract.to_csv(folder / "encounters.csv.gz", index=False)
    cohort, source = load_declared(example, folder)
    assert source == str(folder / "encounters.csv.gz")
    return cohort


def _kept(extract: pd.DataFrame) -> pd.DataFrame:
    return extract[extract["DISCH_DISPO"] != "AMA"].reset_index(drop=True)


def test_the_cohort_rule_drops_self_discharges(loaded: Cohort, extract: pd.DataFrame) -> None:
    kept = _kept(extract)
    assert 0 < len(kept) < N_ROWS
    assert loaded.n_rows == len(kept)
    assert loaded.dataset == "riverside"
    assert f"cohort rule: {N_ROWS - len(kept):,} of {N_ROWS:,} rows left out" in loaded.notes


def test_labels(loaded: Cohort, extract: pd.DataFrame) -> None:
    kept = _kept(extract)
    labels = loaded.labels
    assert list(labels.columns) == ["mortality", "readmission", "los"]
    expected = (kept["DISCH_DISPO"] == "EXPIRED").astype(float).to_numpy()
    np.testing.assert_array_equal(labels["mortality"].to_numpy(), expected)
    assert labels["mortality"].sum() > 0
    excluded = kept["DISCH_DISPO"].isin(["EXPIRED", "HOSPICE", "TRANSFER"]).to_numpy()
    readmission = labels["readmission"].to_numpy()
    assert excluded.any() and np.isnan(readmission[excluded]).all()
    np.testing.assert_array_equal(
        readmission[~excluded], (kept["READMIT_30D"][~excluded] == "Y").astype(float).to_numpy()
    )
    days = (
        pd.to_datetime(kept["DISCH_DTTM"]) - pd.to_datetime(kept["ADMIT_DTTM"])
    ).dt.total_seconds() / 86_400
    np.testing.assert_allclose(labels["los"].to_numpy(), days.to_numpy())
    assert (labels["los"] > 0).all()


def test_features(loaded: Cohort, example: DatasetDeclaration, extract: pd.DataFrame) -> None:
    kept = _kept(extract)
    f = loaded.features
    assert list(f.columns) == [c.name for c in example.features]
    assert not {"MRN", "CSN", "DISCH_DISPO", "READMIT_30D", "ADMIT_DTTM"} & set(f.columns)
    assert loaded.numeric_features == (
        "AGE_YRS", "ED_VISITS_12M", "INPT_ADMITS_12M", "SBP_ADMIT", "HGB_FIRST", "BMI",
        "HBA1C_PCT", "CREAT_MAX", "NA_MIN", "N_MEDS_DISCH",
    )  # fmt: skip
    for name in loaded.numeric_features:
        assert f[name].dtype == np.float64, name
    for name in loaded.categorical_features:
        assert pd.api.types.is_string_dtype(f[name].dtype), name
        assert all(isinstance(v, str) for v in f[name].dropna()), name
    np.testing.assert_array_equal(f["AGE_YRS"].to_numpy(), kept["AGE_YRS"].to_numpy(float))
    gaps = kept["BMI"].isna().to_numpy()
    assert gaps.any() and np.isnan(f["BMI"].to_numpy()[gaps]).all()
    np.testing.assert_allclose(f["BMI"].to_numpy()[~gaps], kept["BMI"][~gaps].to_numpy(float))
    smoking = kept["SMOKING_STATUS"].isna().to_numpy()
    assert smoking.any() and f["SMOKING_STATUS"].isna().to_numpy()[smoking].all()
    assert loaded.vocabularies["SEX"] == ("F", "M", "X")
    assert "SMOKING_STATUS" not in loaded.vocabularies


def test_diagnoses_are_recoded_into_their_groups(loaded: Cohort, extract: pd.DataFrame) -> None:
    kept = _kept(extract)
    expected = kept["PRIN_DX_ICD10"].map(_dx_group).to_numpy(dtype=object)
    np.testing.assert_array_equal(loaded.features["PRIN_DX_ICD10"].to_numpy(dtype=object), expected)
    assert {"circulatory", "blood", "neoplasms", "injury"} <= set(expected)
    groups = loaded.vocabularies["PRIN_DX_ICD10"]
    assert groups[0] == "infectious" and groups[-1] == "other"


def test_patient_codes_keep_a_patients_rows_together(loaded: Cohort, extract: pd.DataFrame) -> None:
    mrn = _kept(extract)["MRN"].to_numpy()
    codes = loaded.patient
    assert codes.dtype == np.int64 and len(codes) == len(mrn)
    pairs = set(zip(codes.tolist(), mrn.tolist(), strict=True))
    # one code per patient, one patient per code
    assert len(pairs) == len(set(mrn)) == len(set(codes.tolist()))
    assert len(set(mrn)) < len(mrn)  # some patients have several encounters
    assert f"{loaded.n_rows:,} rows, {len(set(mrn)):,} distinct patients" in loaded.notes
    assert not any("RG" in note for note in loaded.notes)


def test_strata(loaded: Cohort, extract: pd.DataFrame) -> None:
    assert loaded.strata is not None
    np.testing.assert_array_equal(
        loaded.strata.to_numpy(dtype=object), _kept(extract)["ADMIT_SRC"].to_numpy(dtype=object)
    )


def _same_cohort(a: Cohort, b: Cohort) -> None:
    pd.testing.assert_frame_equal(a.features, b.features)
    pd.testing.assert_frame_equal(a.labels, b.labels)
    np.testing.assert_array_equal(a.patient, b.patient)
    assert a.strata is not None and b.strata is not None
    pd.testing.assert_series_equal(a.strata, b.strata)


def test_parquet_gives_the_same_cohort(
    tmp_path: Path, extract: pd.DataFrame, loaded: Cohort
) -> None:
    definition = example_definition_copy(
        tmp_path, "files: [encounters.csv.gz]", "files: [encounters.parquet]"
    )
    extract.to_parquet(tmp_path / "encounters.parquet", index=False)
    cohort, _ = load_declared(read_definition(definition), None)
    _same_cohort(cohort, loaded)


def test_two_csv_files_give_the_same_cohort(
    tmp_path: Path, extract: pd.DataFrame, loaded: Cohort
) -> None:
    definition = example_definition_copy(
        tmp_path, "files: [encounters.csv.gz]", "files: [part1.csv, part2.csv]"
    )
    # the second file's columns in another order, with one more column (ignored)
    extract.iloc[:700].to_csv(tmp_path / "part1.csv", index=False)
    second = extract.iloc[700:]
    second[list(reversed(second.columns))].assign(EXTRA=1).to_csv(
        tmp_path / "part2.csv", index=False
    )
    cohort, source = load_declared(read_definition(definition), None)
    assert source == str(tmp_path)  # where a later read finds both
    assert f"source: {tmp_path / 'part1.csv'}, {tmp_path / 'part2.csv'}" in cohort.notes
    _same_cohort(cohort, loaded)
    assert "ignored unexpected column(s): EXTRA" in cohort.notes


# --- bad data: a small extract with one fault ------------------------------------------------

SMALL_N = 12
SECRET = "Q7Z-SECRET"


@pytest.fixture(scope="module")
def small() -> pd.DataFrame:
    frame = example_extract(SMALL_N, seed=5)
    frame["DISCH_DISPO"] = "HOME"  # every row in the cohort
    return frame


def _load_bad(
    folder: Path, frame: pd.DataFrame, **kwargs: str | bool
) -> tuple[Path, pytest.ExceptionInfo[DataError]]:
    path = folder / "extract.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(DataError) as ei:
        load_declared(read_definition(EXAMPLE_DEFINITION), path, **kwargs)  # type: ignore[arg-type]
    return path, ei


def _with(frame: pd.DataFrame, column: str, rows: list[int], value: str | None) -> pd.DataFrame:
    """``frame`` with ``value`` in ``column`` at the 1-based data ``rows``."""
    out = frame.copy()
    out[column] = out[column].astype(object)
    for row in rows:
        out.loc[row - 1, column] = value
    return out


def test_the_small_extract_loads(tmp_path: Path, small: pd.DataFrame) -> None:
    small.to_csv(tmp_path / "extract.csv", index=False)
    cohort, _ = load_declared(read_definition(EXAMPLE_DEFINITION), tmp_path / "extract.csv")
    assert cohort.n_rows == SMALL_N


@pytest.mark.parametrize(
    ("column", "rows", "value", "words"),
    [
        pytest.param("SBP_ADMIT", [3, 7], SECRET, "non-numeric", id="text in a float"),
        pytest.param("AGE_YRS", [5], "45.5", "non-integer", id="a fraction in an integer"),
        pytest.param("AGE_YRS", [2, 9], "987", "from 18 to 110", id="outside the range"),
        pytest.param("HGB_FIRST", [4], "-inf", "infinite", id="infinite"),
        pytest.param("SEX", [6], SECRET, "outside", id="outside the vocabulary"),
        pytest.param("PRIN_DX_ICD10", [1, 12], SECRET, "declared form", id="not the pattern"),
        pytest.param("SEX", [8], None, "may have gaps", id="a gap"),
        pytest.param("ADMIT_DTTM", [10], SECRET, "not a date-time", id="not a date-time"),
        pytest.param("ADMIT_DTTM", [2], "2024-13-45 10:00", "not a date-time", id="no such day"),
        pytest.param("MRN", [3], None, "MRN is missing", id="no patient"),
    ],
)
def test_a_bad_value(
    tmp_path: Path,
    small: pd.DataFrame,
    column: str,
    rows: list[int],
    value: str | None,
    words: str,
) -> None:
    path, ei = _load_bad(tmp_path, _with(small, column, rows, value))
    assert ei.value.file == str(path)
    assert ei.value.column == column
    assert ei.value.rows == tuple(rows)
    assert words in ei.value.message
    if value is not None:
        assert str(value) not in str(ei.value)


def test_a_category_outside_the_vocabulary_may_be_kept(tmp_path: Path, small: pd.DataFrame) -> None:
    path = tmp_path / "extract.csv"
    _with(small, "SEX", [6], "U").to_csv(path, index=False)
    cohort, _ = load_declared(read_definition(EXAMPLE_DEFINITION), path, unseen_categories="other")
    assert cohort.n_rows == SMALL_N
    assert any(n.startswith("SEX: 1 value(s) outside its known categories") for n in cohort.notes)


def test_a_repeated_encounter(tmp_path: Path, small: pd.DataFrame) -> None:
    frame = _with(small, "CSN", [9], str(small.loc[1, "CSN"]))
    path, ei = _load_bad(tmp_path, frame)
    assert (ei.value.file, ei.value.column, ei.value.rows) == (str(path), "CSN", (2, 9))
    assert "CSN repeats" in ei.value.message
    assert str(small.loc[1, "CSN"]) not in str(ei.value)


def test_a_discharge_before_its_admission(tmp_path: Path, small: pd.DataFrame) -> None:
    frame = _with(small, "DISCH_DTTM", [4], "2023-01-01 00:00")
    path, ei = _load_bad(tmp_path, frame)
    assert (ei.value.file, ei.value.column, ei.value.rows) == (str(path), "DISCH_DTTM", (4,))
    assert "negative" in ei.value.message and "los" in ei.value.message
    assert "2023" not in str(ei.value)


def test_a_missing_column_is_named(tmp_path: Path, small: pd.DataFrame) -> None:
    path, ei = _load_bad(tmp_path, small.drop(columns=["BMI"]))
    assert (ei.value.file, ei.value.column) == (str(path), "BMI")
    assert "missing column(s): 'BMI'" in ei.value.message


def test_missing_and_misspelt_columns(tmp_path: Path, small: pd.DataFrame) -> None:
    frame = small.drop(columns=["SEX"]).rename(columns={"BMI": "BMI_KG_M2"})
    path, ei = _load_bad(tmp_path, frame)
    assert ei.value.file == str(path) and ei.value.column is None
    assert "'SEX', 'BMI'" in ei.value.message and "'BMI_KG_M2'" in ei.value.message


def test_a_header_only_file(tmp_path: Path, small: pd.DataFrame) -> None:
    path, ei = _load_bad(tmp_path, small.iloc[:0])
    assert ei.value.file == str(path)
    assert "no data rows" in ei.value.message


@pytest.mark.parametrize("content", [b"", b"\n\n"], ids=["empty", "blank lines"])
def test_an_empty_file(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "extract.csv"
    path.write_bytes(content)
    with pytest.raises(DataError) as ei:
        load_declared(read_definition(EXAMPLE_DEFINITION), path)
    assert ei.value.file == str(path)
    assert "empty" in ei.value.message


def test_an_empty_compressed_file(tmp_path: Path) -> None:
    path = tmp_path / "extract.csv.gz"
    path.write_bytes(gzip.compress(b""))
    with pytest.raises(DataError) as ei:
        load_declared(read_definition(EXAMPLE_DEFINITION), path)
    assert ei.value.file == str(path)
    assert "empty" in ei.value.message


def test_a_repeated_header_column(tmp_path: Path, small: pd.DataFrame) -> None:
    path = tmp_path / "extract.csv"
    lines = small.to_csv(index=False).splitlines()
    lines = [lines[0] + ",SEX", *(line + ",F" for line in lines[1:])]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError) as ei:
        load_declared(read_definition(EXAMPLE_DEFINITION), path)
    assert ei.value.file == str(path)
    assert "'SEX' appears twice" in ei.value.message


def test_no_such_source_file(tmp_path: Path) -> None:
    definition = example_definition_copy(tmp_path)
    with pytest.raises(DataError) as ei:
        load_declared(read_definition(definition), tmp_path / "data")
    assert ei.value.file == str(tmp_path / "data")
    assert "does not exist" in ei.value.message
    (tmp_path / "data").mkdir()
    with pytest.raises(DataError) as ei:
        load_declared(read_definition(definition), tmp_path / "data")
    assert "no encounters.csv.gz, and no .zip archive holding it" in ei.value.message
    assert str(tmp_path / "data") in ei.value.message


def test_a_source_file_inside_a_zip_archive_is_read_in_place(
    tmp_path: Path, small: pd.DataFrame
) -> None:
    import zipfile

    definition = example_definition_copy(tmp_path)
    folder = tmp_path / "data" / "export"
    folder.mkdir(parents=True)
    plain = tmp_path / "encounters.csv.gz"
    small.to_csv(plain, index=False)
    with zipfile.ZipFile(folder / "bundle.zip", "w") as archive:
        archive.write(plain, "2024/encounters.csv.gz")
    plain.unlink()
    cohort, source = load_declared(read_definition(definition), tmp_path / "data")
    assert source == str(folder / "bundle.zip")  # a path a later read takes
    assert f"source: {folder / 'bundle.zip'}:2024/encounters.csv.gz" in cohort.notes
    assert cohort.n_rows == int((small["DISCH_DISPO"] != "AMA").sum())


def test_a_declared_sha256(tmp_path: Path, small: pd.DataFrame) -> None:
    data = tmp_path / "encounters.csv"
    small.to_csv(data, index=False)
    digest = hashlib.sha256(data.read_bytes()).hexdigest()
    files = "files: [encounters.csv.gz]"
    good = example_definition_copy(tmp_path, files, f"files: [encounters.csv]\n  sha256: {digest}")
    cohort, _ = load_declared(read_definition(good), None)
    assert cohort.source_sha256 == digest
    wrong = "0" * 64
    bad = example_definition_copy(tmp_path, files, f"files: [encounters.csv]\n  sha256: '{wrong}'")
    with pytest.raises(ChecksumError) as ei:
        load_declared(read_definition(bad), None)
    assert ei.value.file == str(data)
    assert wrong in ei.value.message and digest in ei.value.message
    cohort, _ = load_declared(read_definition(bad), None, verify_checksum=False)
    assert cohort.n_rows == SMALL_N


def test_an_error_in_the_second_file_names_it(tmp_path: Path, small: pd.DataFrame) -> None:
    definition = example_definition_copy(
        tmp_path, "files: [encounters.csv.gz]", "files: [a.csv, b.csv]"
    )
    small.iloc[:5].to_csv(tmp_path / "a.csv", index=False)
    second = _with(small.iloc[5:].reset_index(drop=True), "AGE_YRS", [2, 4], "17")
    second.to_csv(tmp_path / "b.csv", index=False)
    with pytest.raises(DataError) as ei:
        load_declared(read_definition(definition), None)
    assert (ei.value.file, ei.value.column, ei.value.rows) == (
        str(tmp_path / "b.csv"),
        "AGE_YRS",
        (2, 4),
    )


def test_errors_in_both_files_name_the_first(tmp_path: Path, small: pd.DataFrame) -> None:
    definition = example_definition_copy(
        tmp_path, "files: [encounters.csv.gz]", "files: [a.csv, b.csv]"
    )
    _with(small.iloc[:5], "SEX", [3], "U").to_csv(tmp_path / "a.csv", index=False)
    _with(small.iloc[5:].reset_index(drop=True), "SEX", [1], "U").to_csv(
        tmp_path / "b.csv", index=False
    )
    with pytest.raises(DataError) as ei:
        load_declared(read_definition(definition), None)
    assert (ei.value.file, ei.value.rows) == (str(tmp_path / "a.csv"), (3,))


def test_a_repeated_encounter_across_files(tmp_path: Path, small: pd.DataFrame) -> None:
    definition = example_definition_copy(
        tmp_path, "files: [encounters.csv.gz]", "files: [a.csv, b.csv]"
    )
    small.iloc[:5].to_csv(tmp_path / "a.csv", index=False)
    second = _with(small.iloc[5:].reset_index(drop=True), "CSN", [3], str(small.loc[0, "CSN"]))
    second.to_csv(tmp_path / "b.csv", index=False)
    with pytest.raises(DataError) as ei:
        load_declared(read_definition(definition), None)
    assert (ei.value.file, ei.value.column, ei.value.rows) == (str(tmp_path / "a.csv"), "CSN", (1,))


# --- the small definition: a cohort rule, exclusions, gaps and a declared form ---------------


def test_the_small_definition_loads(tmp_path: Path) -> None:
    definition = write(tmp_path / "tiny.yaml", SMALL_DEFINITION)
    write(tmp_path / "rows.csv", SMALL_ROWS)
    cohort, _ = load_declared(read_definition(definition), None)
    assert cohort.n_rows == 3  # the AMA row left out
    np.testing.assert_array_equal(cohort.labels["mortality"], [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(cohort.labels["readmission"], [0.0, np.nan, 1.0])
    np.testing.assert_allclose(cohort.labels["los"], [2.0, 0.5, 4.0])
    np.testing.assert_array_equal(cohort.features["LAB"], [1.5, np.nan, 4.25])
    assert cohort.features["CODE"].tolist() == ["A01", "B02", "C10"]
    assert cohort.patient.tolist() == [0, 0, 1]
    assert cohort.categorical_features == ("SEX", "SRC", "CODE")


def test_missing_values_and_delimiter_as_declared(tmp_path: Path) -> None:
    text = SMALL_DEFINITION.replace(
        "files: [rows.csv]", "files: [rows.csv]\n  delimiter: ';'\n  missing_values: ['-']"
    )
    definition = write(tmp_path / "tiny.yaml", text)
    # the cells left empty are written '-', declared missing
    rows = SMALL_ROWS.replace(",,", ",-,").replace(",", ";")
    write(tmp_path / "rows.csv", rows)
    cohort, _ = load_declared(read_definition(definition), None)
    np.testing.assert_array_equal(cohort.features["LAB"], [1.5, np.nan, 4.25])
