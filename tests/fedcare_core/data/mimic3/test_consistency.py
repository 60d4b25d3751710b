"""MIMIC-III tables that disagree, hold impossible times or are cut off are refused by name."""

from __future__ import annotations

import gzip
from pathlib import Path

import pandas as pd
import pytest

from fedcare_core.data.mimic3 import load_mimic3
from fedcare_core.errors import DataError


def edit(path: Path, row: int, column: str, value: str) -> None:
    """Set data row ``row`` (1-based) of ``column`` in the CSV at ``path``."""
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    df.loc[row - 1, column] = value
    df.to_csv(path, index=False)


def refusal(folder: Path, **kw: object) -> DataError:
    with pytest.raises(DataError) as err:
        load_mimic3(folder, **kw)  # type: ignore[arg-type]
    return err.value


def test_discharge_days_before_admission_is_refused(synth_dir: Path) -> None:
    path = synth_dir / "ADMISSIONS.csv"
    edit(path, 2, "DISCHTIME", "2195-11-10 18:59:57")  # admitted 2195-11-19
    err = refusal(synth_dir)
    assert (err.file, err.column, err.rows) == (str(path), "DISCHTIME", (2,))
    assert "2195" not in str(err).replace(str(synth_dir), "")


def test_same_day_inversion_is_mimics_known_quirk_and_kept(synth_dir: Path) -> None:
    edit(synth_dir / "ADMISSIONS.csv", 2, "DISCHTIME", "2195-11-19 00:10:00")  # 14 min before
    cohort = load_mimic3(synth_dir)
    assert any("1 admissions discharged earlier the same day" in n for n in cohort.notes)


@pytest.mark.parametrize(
    ("column", "value", "says"),
    [
        ("HADM_ID", "999999", "not in the ADMISSIONS table"),
        ("SUBJECT_ID", "999999", "not in the PATIENTS table"),
        ("SUBJECT_ID", "1000", "differs from its admission's"),
    ],
)
def test_stays_must_link_to_their_admission_and_patient(
    synth_dir: Path, column: str, value: str, says: str
) -> None:
    path = synth_dir / "ICUSTAYS.csv"
    edit(path, 3, column, value)
    err = refusal(synth_dir)
    assert (err.file, err.column, err.rows) == (str(path), column, (3,))
    assert says in str(err)


def test_negative_los_is_refused(synth_dir: Path) -> None:
    path = synth_dir / "ICUSTAYS.csv"
    edit(path, 4, "LOS", "-2.5")
    err = refusal(synth_dir)
    assert (err.file, err.column, err.rows) == (str(path), "LOS", (4,))


def test_icu_admission_before_birth_is_refused(synth_dir: Path) -> None:
    edit(synth_dir / "PATIENTS.csv", 3, "DOB", "2150-01-01 00:00:00")  # ICU stay in 2144
    err = refusal(synth_dir)
    assert (err.column, err.rows) == ("INTIME", (3,)) and "ICUSTAYS" in str(err.file)


@pytest.mark.parametrize("table", ["ICUSTAYS", "ADMISSIONS", "PATIENTS", "LABEVENTS"])
def test_a_table_cut_off_mid_row_is_named_truncated(synth_dir: Path, table: str) -> None:
    path = synth_dir / f"{table}.csv"
    data = path.read_bytes().rstrip(b"\n")
    path.write_bytes(data[: data.rindex(b",") - 3])  # the last row loses its last fields
    err = refusal(synth_dir)
    assert err.file == str(path) and "truncated" in str(err)
    assert err.rows == (len(pd.read_csv(path)),)


def test_a_truncated_gzip_table_is_named_truncated(synth_dir: Path) -> None:
    path = synth_dir / "ICUSTAYS.csv"
    packed = gzip.compress(path.read_bytes())
    path.unlink()
    gz = synth_dir / "ICUSTAYS.csv.gz"
    gz.write_bytes(packed[: len(packed) // 2])
    err = refusal(synth_dir)
    assert err.file == str(gz) and "truncated" in str(err)


def test_a_complete_last_line_without_newline_is_accepted(synth_dir: Path) -> None:
    path = synth_dir / "ICUSTAYS.csv"
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    assert load_mimic3(synth_dir).n_rows > 0


@pytest.mark.parametrize(
    ("table", "column", "value"),
    [
        ("ADMISSIONS", "ADMISSION_TYPE", "TELEPORTED"),
        ("ADMISSIONS", "INSURANCE", "Crypto"),
        ("PATIENTS", "GENDER", "X"),
        ("ICUSTAYS", "FIRST_CAREUNIT", "ZOO"),
    ],
)
def test_unknown_categories_are_refused_unless_mapped(
    synth_dir: Path, table: str, column: str, value: str
) -> None:
    path = synth_dir / f"{table}.csv"
    edit(path, 2, column, value)
    err = refusal(synth_dir)
    assert (err.file, err.column, err.rows) == (str(path), column, (2,))
    assert "--unseen-categories other" in str(err) and value not in str(err)
    cohort = load_mimic3(synth_dir, unseen_categories="other")
    assert any(n.startswith(f"{column}: 1 value(s)") for n in cohort.notes)


@pytest.mark.parametrize(
    ("table", "row", "column", "value", "named"),
    [
        ("ICUSTAYS", 2, "OUTTIME", "2195-11-10 00:00:00", "OUTTIME"),  # INTIME 2195-11-19
        ("ICUSTAYS", 2, "INTIME", "2198-11-19 03:02:38", "INTIME"),  # years after admission
        ("ICUSTAYS", 3, "LOS", "1000", "LOS"),
        ("PATIENTS", 1, "DOD", "2150-01-01 00:00:00", "DOD"),  # born 2151
        ("PATIENTS", 3, "DOB", "1994-08-14 00:00:00", "INTIME"),  # aged 150 at the ICU stay
    ],
)
def test_impossible_dates_and_values_are_refused(
    synth_dir: Path, table: str, row: int, column: str, value: str, named: str
) -> None:
    edit(synth_dir / f"{table}.csv", row, column, value)
    err = refusal(synth_dir)
    assert err.column == named and err.rows


@pytest.mark.parametrize(
    ("table", "column", "value"),
    [
        ("ICUSTAYS", "ICUSTAY_ID", "200002.5"),
        ("ICUSTAYS", "SUBJECT_ID", "-1001"),
        ("ADMISSIONS", "HADM_ID", "0"),
        ("LABEVENTS", "VALUENUM", "inf"),
        ("LABEVENTS", "HADM_ID", "100001.5"),
        ("CHARTEVENTS", "ERROR", "7"),
    ],
)
def test_malformed_numbers_are_refused(
    synth_dir: Path, table: str, column: str, value: str
) -> None:
    path = synth_dir / f"{table}.csv"
    edit(path, 2, column, value)
    err = refusal(synth_dir)
    assert (err.file, err.column, err.rows) == (str(path), column, (2,))


@pytest.mark.parametrize("table", ["ICUSTAYS", "ADMISSIONS", "PATIENTS"])
@pytest.mark.parametrize("change", ["short", "long"])
def test_a_ragged_row_mid_table_is_refused(synth_dir: Path, table: str, change: str) -> None:
    path = synth_dir / f"{table}.csv"
    lines = path.read_text().splitlines()
    lines[2] = lines[2].rsplit(",", 1)[0] if change == "short" else lines[2] + ",extra"
    path.write_text("\n".join(lines) + "\n")
    err = refusal(synth_dir)
    assert err.file == str(path) and err.rows == (2,)
