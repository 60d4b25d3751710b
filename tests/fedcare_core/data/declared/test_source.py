"""A declared dataset as a registry source: its definition, row format, rows to score, spec."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedcare_core.data.declared import read_definition
from fedcare_core.data.declared.loader import load_declared
from fedcare_core.data.declared.source import DECLARED_FEATURE_SETS, DeclaredSource
from fedcare_core.data.registry import get_dataset
from fedcare_core.errors import DataError, DefinitionError
from tests.fedcare_core.data.declared.helpers import (
    EXAMPLE_DEFINITION,
    SMALL_DEFINITION,
    SMALL_ROWS,
    changed,
    example_extract,
    write,
)

#: The small definition without its one feature of a declared form (CODE): every feature's raw
#: values are then known from the declarations, and LAB (known at stay) is common, which the
#: paper's partition may do when it says why.
SIMPLE_DEFINITION = changed(
    changed(
        changed(
            SMALL_DEFINITION,
            "  CODE: {type: categorical, pattern: '[A-Z][0-9]{2}', gaps: true, "
            "known_at: admission}\n",
            "",
        ),
        "    readmission: [LAB, CODE]\n",
        "    readmission: []\n",
    ),
    "  common: [AGE, SEX]\n",
    "  common: [AGE, SEX, LAB]\n  ignores_prediction_times: as published\n",
)


@pytest.fixture(scope="module")
def example() -> DeclaredSource:
    return DeclaredSource(read_definition(EXAMPLE_DEFINITION))


@pytest.fixture
def simple(tmp_path: Path) -> DeclaredSource:
    return DeclaredSource(read_definition(write(tmp_path / "simple.yaml", SIMPLE_DEFINITION)))


def test_the_feature_sets() -> None:
    assert DECLARED_FEATURE_SETS == ("paper", "admission")


def test_the_paper_definition_of_the_example(example: DeclaredSource) -> None:
    d = example.declaration
    definition = example.definition("paper")
    assert [o.name for o in definition.objectives] == ["mortality", "readmission", "los"]
    assert definition.partition == d.partition
    assert definition.numeric_features == (
        "AGE_YRS", "ED_VISITS_12M", "INPT_ADMITS_12M", "SBP_ADMIT", "HGB_FIRST", "BMI",
        "HBA1C_PCT", "CREAT_MAX", "NA_MIN", "N_MEDS_DISCH",
    )  # fmt: skip
    assert "SMOKING_STATUS" in definition.categorical_features
    assert definition.vocabularies["ICU_STAY"] == ("Y", "N")
    assert definition.vocabularies["PRIN_DX_ICD10"][-1] == "other"
    assert "SMOKING_STATUS" not in definition.vocabularies


def test_the_admission_definition_of_the_example(example: DeclaredSource) -> None:
    # every common feature is known at admission and each pool by its prediction time
    assert example.definition("admission").partition == example.declaration.partition


def test_the_admission_definition_moves_a_late_common_feature(simple: DeclaredSource) -> None:
    paper = simple.definition("paper").partition
    assert paper.common == ("AGE", "SEX", "LAB")
    admission = simple.definition("admission").partition
    assert admission.common == ("AGE", "SEX")
    # LAB, known at stay, is seen by readmission (predicted at discharge) only
    assert admission.private == {"mortality": ("SRC",), "readmission": ("LAB",), "los": ("SRC",)}


def test_the_row_format_of_the_example(example: DeclaredSource) -> None:
    fmt = example.row_format()
    assert fmt.dataset == "riverside"
    assert fmt.columns == tuple(c.name for c in example.declaration.features)
    assert fmt.columns[:3] == ("AGE_YRS", "SEX", "ADMIT_SRC")
    assert fmt.integer_columns == ("AGE_YRS", "ED_VISITS_12M", "INPT_ADMITS_12M", "N_MEDS_DISCH")
    assert fmt.identifiers == ("CSN", "MRN")
    assert fmt.labels == ("DISCH_DISPO", "READMIT_30D", "ADMIT_DTTM", "DISCH_DTTM")
    assert fmt.example is None
    assert example.example_rows() is None  # an open vocabulary, a declared form


def _kept(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["DISCH_DISPO"] != "AMA"].reset_index(drop=True)


def test_features_from_rows_equal_the_loaders(example: DeclaredSource, tmp_path: Path) -> None:
    frame = example_extract(300, seed=21)
    frame.to_csv(tmp_path / "encounters.csv", index=False)
    cohort, _ = load_declared(example.declaration, tmp_path / "encounters.csv")
    fmt = example.row_format()
    numeric = cohort.numeric_features
    # rows as a program holds them (typed), and as a CSV reader gives them (inferred)
    for rows in (_kept(frame), _kept(pd.read_csv(tmp_path / "encounters.csv"))):
        got = fmt.features(rows, fmt.columns, numeric, None, "refuse")
        pd.testing.assert_frame_equal(got, cohort.features)


def test_features_from_rows_of_some_columns(example: DeclaredSource) -> None:
    rows = example_extract(5, seed=2)
    got = example.features_from_rows(rows, ["SEX", "BMI"], ["BMI"], "rows.csv", "refuse")
    assert list(got.columns) == ["SEX", "BMI"] and got["BMI"].dtype == np.float64


@pytest.mark.parametrize(
    ("column", "value", "words"),
    [
        ("AGE_YRS", 150, "from 18 to 110"),
        ("SEX", "U", "outside"),
        ("SBP_ADMIT", "high", "non-numeric"),
        ("PRIN_DX_ICD10", "heart", "declared form"),
    ],
)
def test_features_from_rows_refuse_a_bad_value(
    example: DeclaredSource, column: str, value: str | int, words: str
) -> None:
    rows = example_extract(8, seed=4)
    rows.index = rows.index + 100  # the rows' own index is not what a message counts
    rows[column] = rows[column].astype(object)
    rows.loc[[102, 106], column] = value
    fmt = example.row_format()
    with pytest.raises(DataError) as ei:
        fmt.features(rows, fmt.columns, (), "scoring.csv", "refuse")
    assert (ei.value.file, ei.value.column, ei.value.rows) == ("scoring.csv", column, (3, 7))
    assert words in ei.value.message
    assert str(value) not in str(ei.value)


def test_features_from_rows_name_the_input_rows_without_a_source(
    example: DeclaredSource,
) -> None:
    rows = example_extract(3, seed=4)
    rows["SEX"] = "Q"  # outside its vocabulary (a missing value would be imputed)
    with pytest.raises(DataError) as ei:
        example.features_from_rows(rows, ["SEX"], (), None, "refuse")
    assert (ei.value.file, ei.value.column, ei.value.rows) == ("the input rows", "SEX", (1, 2, 3))


def test_features_from_rows_refuse_a_missing_column(example: DeclaredSource) -> None:
    rows = example_extract(3, seed=4).drop(columns=["BMI"])
    with pytest.raises(DataError) as ei:
        example.features_from_rows(rows, ["SEX", "BMI"], ["BMI"], "scoring.csv", "refuse")
    assert (ei.value.file, ei.value.column) == ("scoring.csv", "BMI")


def test_the_example_rows_of_a_simple_definition(simple: DeclaredSource) -> None:
    fmt = simple.row_format()
    assert fmt.columns == ("AGE", "SEX", "SRC", "LAB")
    assert fmt.integer_columns == ("AGE",)
    assert fmt.identifiers == ("EID", "PID")
    assert fmt.example is not None
    rows = fmt.example()
    assert len(rows) == 2 and list(rows.columns) == list(fmt.columns)
    assert rows["SEX"].tolist() == ["F", "M"] and rows["SRC"].tolist() == ["ED", "CLINIC"]
    ages = rows["AGE"].tolist()
    assert all(isinstance(a, int) and 18 <= a <= 110 for a in ages) and ages[0] != ages[1]
    features = fmt.features(rows, fmt.columns, ("AGE", "LAB"), None, "refuse")
    assert features.shape == (2, 4)
    assert features["LAB"].between(0, 50).all()
    # a fresh copy each time
    rows.loc[0, "SEX"] = "X"
    assert fmt.example()["SEX"].tolist() == ["F", "M"]


def test_patient_keys(simple: DeclaredSource, tmp_path: Path) -> None:
    write(tmp_path / "rows.csv", SMALL_ROWS)
    keys = simple.patient_keys(tmp_path)
    assert sorted(keys.tolist()) == ["p1", "p2", "p3"]


def test_locate(simple: DeclaredSource, tmp_path: Path) -> None:
    # No folder given and no file beside the definition: the message says how to name one.
    with pytest.raises(DataError, match=r"no rows\.csv.*--data-dir DIR.*FEDCARE_DATA_DIR=DIR"):
        simple.locate(None)
    write(tmp_path / "rows.csv", SMALL_ROWS)
    assert simple.locate(None) == simple.declaration.path.parent
    assert simple.locate(tmp_path / "x") == tmp_path / "x"  # a folder given is the caller's


def test_get_dataset_reads_a_definition_file(tmp_path: Path) -> None:
    path = write(tmp_path / "ward.yaml", SIMPLE_DEFINITION)
    spec = get_dataset(str(path))
    assert spec.name == "tiny" and spec.title == "A tiny ward"
    assert spec.objectives == 3
    assert spec.feature_sets == DECLARED_FEATURE_SETS
    assert spec.definition_text == path.read_text(encoding="utf-8")
    assert "rows.csv" in spec.model_input
    source = spec.load_source()
    assert isinstance(source, DeclaredSource) and source.declaration.path == path


def test_get_dataset_reads_a_changed_file_again(tmp_path: Path) -> None:
    path = write(tmp_path / "ward.yml", SIMPLE_DEFINITION)
    assert get_dataset(str(path)).title == "A tiny ward"
    write(path, SIMPLE_DEFINITION.replace("A tiny ward", "A small ward, renamed"))
    assert get_dataset(str(path)).title == "A small ward, renamed"


def test_get_dataset_refuses_an_invalid_file(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.yaml", SIMPLE_DEFINITION.replace("version: 1", "version: 2"))
    with pytest.raises(DefinitionError) as ei:
        get_dataset(str(path))
    assert (ei.value.file, ei.value.key) == (str(path), "version")


def test_get_dataset_refuses_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DefinitionError) as ei:
        get_dataset(str(tmp_path / "none.yaml"))
    assert ei.value.file == str(tmp_path / "none.yaml")


@pytest.mark.parametrize(
    ("column", "value", "words"),
    [
        ("MRN", None, "MRN is missing"),  # an identifier given is never empty
        ("CSN", "NULL", "CSN is missing"),  # a declared missing mark is missing
        ("SEX", None, "SEX is missing"),  # no gaps declared: refused, not imputed
        ("AGE_YRS", "", "AGE_YRS is missing"),
    ],
)
def test_rows_to_score_are_refused_where_a_run_refuses_them(
    example: DeclaredSource, column: str, value: object, words: str
) -> None:
    rows = example_extract(8, seed=4)
    rows[column] = rows[column].astype(object)
    rows.loc[[2, 5], column] = value
    fmt = example.row_format()
    with pytest.raises(DataError) as ei:
        fmt.features(rows, fmt.columns, (), "scoring.csv", "refuse")
    assert (ei.value.file, ei.value.column, ei.value.rows) == ("scoring.csv", column, (3, 6))
    assert words in ei.value.message


def test_rows_to_score_repeat_no_encounter_and_may_hold_no_identifier(
    example: DeclaredSource,
) -> None:
    rows = example_extract(6, seed=4)
    fmt = example.row_format()
    twice = rows.copy()
    twice.loc[4, "CSN"] = twice.loc[1, "CSN"]
    with pytest.raises(DataError, match="CSN repeats") as ei:
        fmt.features(twice, fmt.columns, (), None, "refuse")
    assert (ei.value.column, ei.value.rows) == ("CSN", (2, 5))
    # The served model is given the features alone: nothing to check of the identifiers.
    alone = fmt.features(rows.drop(columns=["MRN", "CSN"]), fmt.columns, (), None, "refuse")
    pd.testing.assert_frame_equal(alone, fmt.features(rows, fmt.columns, (), None, "refuse"))
    # A gap the definition allows is still read as missing (the model encodes it).
    rows["BMI"] = rows["BMI"].astype(object)
    rows.loc[0, "BMI"] = None
    assert fmt.features(rows, ["BMI"], ["BMI"], None, "refuse")["BMI"].isna().tolist()[0]


def test_rows_from_a_file_are_read_and_checked_as_a_run_reads_them(
    example: DeclaredSource, tmp_path: Path
) -> None:
    import gzip

    rows = example_extract(6, seed=4)
    fmt = example.row_format()
    assert fmt.read_file is not None
    plain = tmp_path / "rows.csv"
    rows.to_csv(plain, index=False)
    packed = tmp_path / "rows.csv.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    read, name = fmt.read_file(packed, ["SEX", "AGE_YRS"], "refuse")
    order = [c for c in rows.columns if c in ("MRN", "CSN", "SEX", "AGE_YRS")]  # the file's
    assert name == str(packed) and list(read.columns) == order
    assert read["AGE_YRS"].tolist() == rows["AGE_YRS"].astype(str).tolist()  # text, as a run
    header = plain.read_text().splitlines()
    twice = [header[0].replace("PAYOR_CLASS", "SEX"), *header[1:]]
    (tmp_path / "twice.csv").write_text("\n".join(twice) + "\n")
    with pytest.raises(DataError, match="'SEX' appears twice in the header"):
        fmt.read_file(tmp_path / "twice.csv", ["SEX"], "refuse")
    rows.drop(columns=["CSN"]).to_csv(plain, index=False)
    with pytest.raises(DataError, match=r"missing column.*'CSN'"):
        fmt.read_file(plain, ["SEX"], "refuse")
    rows.loc[3, "SEX"] = ""
    rows.to_csv(plain, index=False)
    with pytest.raises(DataError, match="SEX is missing") as ei:
        fmt.read_file(plain, ["SEX"], "refuse")
    assert (ei.value.file, ei.value.column, ei.value.rows) == (str(plain), "SEX", (4,))
