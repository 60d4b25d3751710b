"""A CSV header shifted against its rows is named as the header's fault, not every row's."""

from __future__ import annotations

import bz2
import gzip
from pathlib import Path

import pandas as pd
import pytest

from fedcare_core.errors import DataError
from fedcare_core.files.csv_header import (
    SAMPLE_ROWS,
    file_text_start,
    header_shift_problem,
    refuse_shifted_header,
    text_start,
)

ROWS = ["p1,e1,40,F,1.5", "p2,e2,70,M,", 'p3,e3,65,"M",4.25']
HEADER = "PID,EID,AGE,SEX,LAB"


def csv_text(header: str, rows: list[str] = ROWS) -> str:
    return "\n".join([header, *rows]) + "\n"


def problem(text: str, **kwargs: object) -> str | None:
    return header_shift_problem(text, whole=True, **kwargs)  # type: ignore[arg-type]


def test_a_header_and_rows_that_agree_are_fine() -> None:
    assert problem(csv_text(HEADER)) is None
    quoted = csv_text(HEADER, [*ROWS, 'p4,e4,50,"F, or M","1\n2"'])  # a delimiter, a newline
    assert problem(quoted) is None


def test_a_name_missing_from_the_header_is_named() -> None:
    text = csv_text("PID,AGE,SEX,LAB")
    found = problem(text, expected=["PID", "EID", "AGE", "SEX", "LAB"])
    assert found is not None
    assert found.startswith("the header looks shifted: it names 4 fields but each of its rows")
    assert "holds 5 (1 column name missing from it: 'EID'?)" in found
    assert "p1" not in found and "40" not in found  # no value of any row


def test_a_name_too_many_is_named() -> None:
    header = "PID,EID,WARD,AGE,SEX,LAB"
    found = problem(csv_text(header), expected=["PID", "EID", "AGE", "SEX", "LAB"])
    assert found is not None and "names 6 fields" in found and "holds 5" in found
    assert "(1 name too many in it: 'WARD'?)" in found
    # a reader of some columns only cannot tell which of the others is the one too many
    found = problem(csv_text(header), expected=["PID", "EID", "AGE"])
    assert found is not None and "(1 name too many in it)" in found


def test_two_names_missing_and_no_names_to_suggest() -> None:
    found = problem(csv_text("PID,EID,AGE"))
    assert found is not None and "(2 column names missing from it)" in found


def test_ragged_rows_are_left_to_the_row_checks() -> None:
    assert problem(csv_text(HEADER, [ROWS[0], "p2,e2,70,M", ROWS[2]])) is None
    one_short = csv_text(HEADER, [r + ",x" for r in ROWS[:2]] + [ROWS[2]])
    assert problem(one_short) is None


def test_a_cut_last_line_is_not_counted() -> None:
    cut = csv_text(HEADER, ROWS[:1]) + "p2,e2"  # a truncated file: its one full row agrees
    assert problem(cut) is None
    only_cut = HEADER + "\np1,e1"
    assert problem(only_cut) is None


def test_blank_lines_are_skipped_and_the_sample_is_bounded() -> None:
    rows = [f"p{i},e{i},40" for i in range(3 * SAMPLE_ROWS)]
    text = csv_text(HEADER, ["", *rows, ""])
    found = problem(text)
    assert found is not None and f"each of its first {SAMPLE_ROWS} rows holds 3" in found


def test_another_delimiter() -> None:
    assert problem(csv_text("PID;AGE", ["p1;e1;40"]), delimiter=";") is not None
    assert problem(csv_text("PID;EID;AGE", ["p1;e1;40"]), delimiter=";") is None


@pytest.mark.parametrize(("suffix", "pack"), [(".gz", gzip.compress), (".bz2", bz2.compress)])
def test_compressed_files_are_read_from_their_start(suffix: str, pack: object) -> None:
    data = pack(csv_text("PID,AGE,SEX,LAB").encode())  # type: ignore[operator]
    start = text_start(data, f"rows.csv{suffix}")
    assert start is not None and start[1] and start[0].startswith("PID,AGE")
    with pytest.raises(DataError) as ei:
        refuse_shifted_header(data, file="rows.csv", name=f"rows.csv{suffix}")
    assert ei.value.file == "rows.csv" and ei.value.rows is None
    assert text_start(b"not gzip", "rows.csv.gz") is None  # the reader reports that


def test_a_file_on_disk_is_read_from_its_start(tmp_path: Path) -> None:
    path = tmp_path / "ROWS.csv.gz"
    path.write_bytes(gzip.compress(csv_text(HEADER).encode()))
    assert file_text_start(path) == (csv_text(HEADER), True)
    assert file_text_start(tmp_path / "absent.csv") is None


def test_a_declared_export_with_a_shifted_header_names_the_header(tmp_path: Path) -> None:
    """An unused column's name missing: without the check, every value is silently moved."""
    from fedcare_core.data.declared import read_definition
    from fedcare_core.data.declared.loader import load_declared
    from tests.fedcare_core.data.declared.helpers import (
        example_definition_copy,
        example_extract,
    )

    frame = example_extract(60, seed=2)
    frame.insert(2, "UNUSED", "x")
    lines = frame.to_csv(index=False).splitlines()
    lines[0] = lines[0].replace(",UNUSED", "")
    (tmp_path / "encounters.csv").write_text("\n".join(lines) + "\n")
    definition = example_definition_copy(tmp_path, "encounters.csv.gz", "encounters.csv")
    with pytest.raises(DataError) as ei:
        load_declared(read_definition(definition), tmp_path)
    assert ei.value.file is not None and ei.value.file.endswith("encounters.csv")
    assert str(ei.value).count("\n") == 0 and "the header looks shifted" in ei.value.message
    assert ei.value.rows is None and ei.value.column is None


def test_a_mimic_table_with_a_shifted_header_names_the_table(tmp_path: Path) -> None:
    from fedcare_core.data.mimic3 import load_mimic3
    from tests.fedcare_core.data.mimic3.synthetic import write_synthetic_mimic3

    write_synthetic_mimic3(tmp_path, n_patients=4, seed=5)
    path = tmp_path / "ADMISSIONS.csv"
    lines = path.read_text().splitlines()
    header = lines[0].split(",")
    lines[0] = ",".join([*header, "EXTRA_NOTE"])
    path.write_text("\n".join(lines) + "\n")
    assert len(pd.read_csv(path).columns) == len(header) + 1  # pandas pads: no error of its own
    with pytest.raises(DataError) as ei:
        load_mimic3(tmp_path)
    assert ei.value.file == str(path)
    assert "ADMISSIONS table: the header looks shifted" in ei.value.message
    assert "(1 name too many in it)" in ei.value.message
