"""A definition of the table a built-in extractor builds (MIMIC-III's), and patient numbering."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedcare_core.data.declared import read_definition
from fedcare_core.data.declared.loader import load_declared
from fedcare_core.data.definitions import builtin_definition
from fedcare_core.data.mimic3.extract import EXTRACTED_COLUMNS
from fedcare_core.errors import DataError, DefinitionError
from tests.fedcare_core.data.declared.helpers import SMALL_DEFINITION, changed, write

MIMIC3_TEXT = builtin_definition("mimic3").read_text(encoding="utf-8")


def _mimic3_changed(old: str, new: str) -> str:
    assert old in MIMIC3_TEXT
    return MIMIC3_TEXT.replace(old, new, 1)


@pytest.mark.parametrize(
    ("text", "key", "word"),
    [
        pytest.param(
            _mimic3_changed("extractor: mimic3", "extractor: eicu"),
            "source.extractor",
            "'eicu' is no installed extractor; expected one of mimic3",
            id="an unknown extractor",
        ),
        pytest.param(
            _mimic3_changed("extractor: mimic3", "extractor: mimic3\n  files: [stays.csv]"),
            "source",
            "",
            id="files and an extractor",
        ),
        pytest.param(
            _mimic3_changed("  LOS:\n", "  ICU_LOS:\n"),
            "columns.ICU_LOS",
            "the mimic3 extractor gives no column 'ICU_LOS'",
            id="a column the extractor does not give",
        ),
        pytest.param(
            _mimic3_changed("  patient: SUBJECT_ID", "  patient: MRN"),
            "identifiers",
            "gives no column 'MRN'",
            id="an identifier the extractor does not give",
        ),
        pytest.param(
            _mimic3_changed("extractor: mimic3", "extractor: mimic3\n  rename: {GENDER: gender}"),
            "source.rename",
            "reads no file",
            id="a rename of an extractor's table",
        ),
    ],
)
def test_a_malformed_extractor_definition_is_refused(
    tmp_path: Path, text: str, key: str, word: str
) -> None:
    path = write(tmp_path / "mimic.yaml", text)
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(DefinitionError) as ei:
        read_definition(path)
    assert (ei.value.file, ei.value.key) == (str(path), key)
    assert word in ei.value.message
    assert sorted(os.listdir(tmp_path)) == before


def test_the_builtin_mimic3_definition_declares_every_extracted_column() -> None:
    d = read_definition(builtin_definition("mimic3"))
    assert set(d.identifiers) | set(d.columns) == set(EXTRACTED_COLUMNS)
    assert d.source.extractor == "mimic3" and d.numbering == "ascending"
    assert len(d.features) == 46


def test_an_extractor_needs_the_raw_tables_folder() -> None:
    d = read_definition(builtin_definition("mimic3"))
    with pytest.raises(DataError, match="mimic3 extractor from raw tables: pass --data-dir"):
        load_declared(d, None)


def test_a_refused_category_names_the_raw_table(tmp_path: Path) -> None:
    from tests.fedcare_core.data.mimic3.synthetic import synthetic_mimic3_tables, write_tables

    tables = synthetic_mimic3_tables(n_patients=6, seed=3, with_chartevents=False)
    tables["ADMISSIONS"].loc[2, "INSURANCE"] = "Crowdfunded"
    write_tables(tmp_path, tables)
    d = read_definition(builtin_definition("mimic3"))
    with pytest.raises(DataError) as ei:
        load_declared(d, tmp_path)
    assert ei.value.file == str(tmp_path / "ADMISSIONS.csv")
    assert ei.value.column == "INSURANCE"
    assert list(ei.value.rows or ()) == [3]  # ADMISSIONS.csv row 3 (once), not a stay row
    assert "Crowdfunded" not in str(ei.value)
    cohort, _ = load_declared(d, tmp_path, unseen_categories="other")
    assert any(n.startswith("INSURANCE: 2 value(s) outside") for n in cohort.notes)  # 2 stays


@pytest.mark.parametrize(
    ("numbering", "expected"),
    [("first_seen", [0, 1, 2, 1, 3]), ("ascending", [3, 0, 2, 0, 1])],
)
def test_patients_are_numbered_as_declared(
    tmp_path: Path, numbering: str, expected: list[int]
) -> None:
    text = changed(
        SMALL_DEFINITION, "  encounter: EID", f"  encounter: EID\n  numbering: {numbering}"
    )
    path = write(tmp_path / "d.yaml", text)
    rows = pd.DataFrame(
        {
            "PID": ["100", "9", "11", "9", "10"],  # numerically 9 < 10 < 11 < 100
            "EID": ["1", "2", "3", "4", "5"],
            "ADMIT": ["2020-01-01"] * 5,
            "DISCH": ["2020-01-03"] * 5,
            "AGE": ["50"] * 5,
            "SEX": ["F"] * 5,
            "SRC": ["ED"] * 5,
            "LAB": [""] * 5,
            "CODE": [""] * 5,
            "DISPO": ["HOME", "EXPIRED", "HOME", "HOME", "HOME"],
            "READMIT": ["N", "N", "Y", "N", "N"],
        }
    )
    rows.to_csv(tmp_path / "rows.csv", index=False)
    cohort, _ = load_declared(read_definition(path), tmp_path)
    np.testing.assert_array_equal(cohort.patient, expected)
