"""Bad input: every failure is a DataError naming file, column and rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedcare_core.data.diabetes130 import DIABETES130_COLUMNS
from fedcare_core.errors import DataError
from tests.fedcare_core.data.diabetes130.helpers import (
    N_FIXTURE_ROWS,
    fixture_bytes,
    fixture_lines,
    load_tiny,
    set_field,
    write_csv,
)


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
    assert ei.value.rows == (9,)  # the data row (pandas says file line 10)
    message = str(ei.value)
    assert "\n" not in message and "line 10" not in message
    assert "row 9: 52 fields, the header has 50" in message, message


def test_not_utf8(tmp_path: Path) -> None:
    lines = set_field(fixture_lines(), 3, "medical_specialty", "PLACEHOLDER")
    data = write_csv(tmp_path / "x.csv", lines).read_bytes().replace(b"PLACEHOLDER", b"\xff\xfe")
    csv = tmp_path / "diabetic_data.csv"
    csv.write_bytes(data)
    with pytest.raises(DataError) as ei:
        load_tiny(csv)
    assert ei.value.file == str(csv)


# ---------------------------------------------------------------------------------------------
# The reading pieces on hand-made input
# ---------------------------------------------------------------------------------------------
