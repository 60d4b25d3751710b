"""Finding and reading the tables: file names, compression, headers and bad files."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedcare_core.data.cohort import Cohort
from fedcare_core.data.mimic3 import load_mimic3
from fedcare_core.data.mimic3.reader import (
    file_sha256,
    find_table,
    iter_table,
    read_header,
    read_small,
)
from fedcare_core.data.mimic3.schema import CHARTEVENTS, LABEVENTS
from fedcare_core.errors import DataError
from tests.fedcare_core.data.mimic3.helpers import assert_same_cohort
from tests.fedcare_core.data.mimic3.synthetic import ICUSTAYS_COLUMNS, write_synthetic_mimic3


def test_lowercase_gzip_identical(tmp_path: Path, synth_cohort: Cohort) -> None:
    paths = write_synthetic_mimic3(tmp_path, n_patients=30, seed=0, lowercase=True, gzip=True)
    assert paths["ICUSTAYS"].name == "icustays.csv.gz"
    assert pd.read_csv(paths["ICUSTAYS"], nrows=0).columns[0] == "row_id"
    c = load_mimic3(tmp_path)
    assert_same_cohort(c, synth_cohort)
    assert c.notes == synth_cohort.notes
    assert c.source_sha256 == hashlib.sha256(paths["ICUSTAYS"].read_bytes()).hexdigest()


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
    assert str(path) in msg and "'LOS'" in msg and "rows 3, 5" in msg
    assert "abc" not in msg  # rows are named, their values never shown


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


def test_error_ambiguous_table_files(synth_dir: Path) -> None:
    (synth_dir / "patients.csv.gz").write_bytes((synth_dir / "PATIENTS.csv").read_bytes())
    with pytest.raises(DataError, match="PATIENTS"):
        load_mimic3(synth_dir)


# ---------------------------------------------------------------------------------------------
# The reader on small files
# ---------------------------------------------------------------------------------------------


def test_find_optional_table_absent(tmp_path: Path) -> None:
    (tmp_path / "chartevents.txt").write_text("x\n")
    assert find_table(tmp_path, "CHARTEVENTS", required=False) is None
    (tmp_path / "ChartEvents.CSV").write_text("x\n")
    assert find_table(tmp_path, "CHARTEVENTS", required=False) == tmp_path / "ChartEvents.CSV"


def test_iter_table_chunks_rows_and_types(tmp_path: Path) -> None:
    path = tmp_path / "labevents.csv"
    path.write_text(
        "row_id,hadm_id,itemid,charttime,valuenum,flag\n"
        "1,10,50912,2150-01-01 10:00:00,1.5,\n"
        "2,,50912,2150-01-01 11:00:00,,abnormal\n"
        "3,11,50971,2150-01-02 10:00:00,4,\n"
    )
    chunks = list(iter_table(path, LABEVENTS, chunksize=2))
    assert [len(c) for c in chunks] == [2, 1]
    table = pd.concat(chunks, ignore_index=True)
    # File order, upper case; FLAG and ROW_ID are not read.
    assert list(table.columns) == ["HADM_ID", "ITEMID", "CHARTTIME", "VALUENUM", "_ROW"]
    assert table["_ROW"].tolist() == [1, 2, 3]
    assert table["VALUENUM"].dtype == np.float64 and table["HADM_ID"].isna().tolist()[1]
    assert table["CHARTTIME"].iloc[2] == "2150-01-02 10:00:00"
    pd.testing.assert_frame_equal(read_small(path, LABEVENTS, chunksize=2), table)


def test_read_header_skips_optional_columns(tmp_path: Path) -> None:
    path = tmp_path / "CHARTEVENTS.csv"
    path.write_text(" icustay_id ,ITEMID,ChartTime,valuenum\n1,211,2150-01-01 00:00:00,80\n")
    assert read_header(path, CHARTEVENTS) == {
        "ICUSTAY_ID": " icustay_id ",
        "ITEMID": "ITEMID",
        "VALUENUM": "valuenum",
        "CHARTTIME": "ChartTime",
    }


def test_file_sha256_hashes_the_stored_bytes(tmp_path: Path) -> None:
    path = tmp_path / "x.csv.gz"
    path.write_bytes(b"\x1f\x8b not really gzip")
    assert file_sha256(path) == hashlib.sha256(path.read_bytes()).hexdigest()
