"""Rows to score become the loader's features: on the real file, and value by value."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedcare_core.data.diabetes130 import load_diabetes130
from fedcare_core.data.diabetes130.dataset import SOURCE, example_rows
from fedcare_core.data.diabetes130.schema import DIABETES130_FEATURES as ROW_COLUMNS
from fedcare_core.errors import DataError


def _features(rows: pd.DataFrame, columns=ROW_COLUMNS, policy: str = "refuse") -> pd.DataFrame:
    return SOURCE.row_format().features(rows, columns, (), "rows.csv", policy)


@pytest.mark.realdata
def test_pandas_read_rows_give_the_loaders_features(data_dir: Path):
    """Read with pandas' defaults ('None' becomes missing, ints int64): the same 46 features."""
    cohort = load_diabetes130(data_dir)
    with zipfile.ZipFile(data_dir / "diabetes130" / "dataset_diabetes.zip") as zf:
        data = zf.read("dataset_diabetes/diabetic_data.csv")
    rows = pd.read_csv(io.BytesIO(data), low_memory=False)
    assert rows["max_glu_serum"].isna().any()  # pandas' default reading of the file's 'None'
    pd.testing.assert_frame_equal(_features(rows), cohort.features)
    some = ["age", "diag_2", "insulin", "number_inpatient"]
    pd.testing.assert_frame_equal(_features(rows, some), cohort.features.loc[:, some])


def test_the_example_rows_are_valid_and_made_up():
    rows = example_rows()
    assert list(rows.columns) == list(ROW_COLUMNS) and len(rows) == 2
    features = _features(rows)
    assert features["age"].tolist() == [75.0, 55.0]
    assert features["diag_1"].tolist() == ["circulatory", "circulatory"]


def test_only_the_named_columns_are_needed_and_checked():
    rows = example_rows().loc[:, ["age", "race", "gender"]]
    rows["race"] = rows["race"].astype(object)
    rows.loc[1, "race"] = "?"  # race may have gaps: missing, encoded as in training
    out = _features(rows, ["race", "age"])
    assert list(out.columns) == ["race", "age"]
    assert out["race"].isna().tolist() == [False, True]
    with pytest.raises(DataError, match="'weight'"):
        _features(rows, ["weight", "age"])


@pytest.mark.parametrize(
    ("column", "value", "words"),
    [
        ("num_lab_procedures", -1, "from 0 to 500"),
        ("num_lab_procedures", "x", "non-numeric"),
        ("num_medications", True, "true/false"),
        ("admission_type_id", 1.5, "non-integer"),
        ("admission_type_id", np.nan, "is missing"),
        ("gender", "?", "gender is missing; only race"),  # no gaps allowed: refused, as a run
        ("age", "70-80", "ten brackets"),
        ("diag_3", "250.8.1", "ICD-9-CM"),
        ("A1Cresult", ">9", "known categories"),
    ],
)
def test_a_bad_value_names_column_and_row(column, value, words):
    rows = example_rows()
    rows[column] = rows[column].astype(object)
    rows.loc[1, column] = value
    with pytest.raises(DataError, match=words) as info:
        _features(rows)
    assert (info.value.file, info.value.column, info.value.rows) == ("rows.csv", column, (2,))


def test_missing_marks_and_the_files_none():
    rows = example_rows()
    rows["race"] = rows["race"].astype(object)
    rows.loc[0, "race"], rows.loc[1, "race"] = "?", ""
    rows["max_glu_serum"] = np.nan  # pandas' reading of 'None'
    out = _features(rows)
    assert out["race"].isna().all()
    assert out["max_glu_serum"].tolist() == ["None", "None"]
    unseen = example_rows()
    unseen.loc[0, "race"] = "Martian"
    assert _features(unseen, policy="other")["race"].tolist()[0] == "Martian"
