"""Features from the tiny fixture: types, hand-set rows, missing values, ICD-9 groups."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedcare_core.data.declared.values import recode_groups
from fedcare_core.data.diabetes130 import (
    DIABETES130_FEATURES,
    EXCLUDED_COLUMNS,
    MEDICATION_COLUMNS,
)
from fedcare_core.data.diabetes130.loader import diabetes130_declaration
from fedcare_core.errors import DataError
from tests.fedcare_core.data.diabetes130.helpers import (
    FIXTURE,
    N_FIXTURE_ROWS,
    fixture_lines,
    load_tiny,
    set_field,
    write_csv,
)


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
    s = pd.Series([*codes, None], dtype=object)
    groups = diabetes130_declaration().columns["diag_1"].groups
    assert groups is not None
    got = recode_groups(s, groups)
    assert got.iloc[:-1].tolist() == list(codes.values())
    assert pd.isna(got.iloc[-1])


def test_medication_columns_are_categorical() -> None:
    c = load_tiny()
    assert len(MEDICATION_COLUMNS) == 23
    for m in MEDICATION_COLUMNS:
        assert m in c.categorical_features
        assert set(c.features[m].dropna()) <= {"No", "Steady", "Up", "Down"}


def test_bad_age(tmp_path: Path) -> None:
    csv = write_csv(tmp_path / "diabetic_data.csv", set_field(fixture_lines(), 8, "age", "70s"))
    with pytest.raises(DataError) as ei:
        load_tiny(csv)
    assert (ei.value.column, ei.value.rows) == ("age", (8,))


def test_empty_fields_are_missing(tmp_path: Path) -> None:
    csv = write_csv(tmp_path / "diabetic_data.csv", set_field(fixture_lines(), 3, "race", ""))
    c = load_tiny(csv)
    assert c.features["race"].isna()[2]


# ---------------------------------------------------------------------------------------------
# The feature pieces on hand-made values
# ---------------------------------------------------------------------------------------------
