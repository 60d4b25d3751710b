"""Date parsing: ISO and M/D/Y values, two-digit years and bad dates."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedcare_core.data.cohort import Cohort
from fedcare_core.data.mimic3 import load_mimic3
from fedcare_core.data.mimic3.dates import TimeStats, parse_times
from fedcare_core.errors import DataError
from tests.fedcare_core.data.mimic3.helpers import assert_same_cohort
from tests.fedcare_core.data.mimic3.synthetic import write_tables


def test_two_digit_year_dates_are_resolved(
    tmp_path: Path, synth_tables: dict, synth_cohort: Cohort
) -> None:
    """ADMISSIONS/PATIENTS written as M/D/YY H:MM (a spreadsheet round trip, as in the demo)."""

    def us(text: object) -> object:
        if not isinstance(text, str):
            return text
        t = pd.Timestamp(text)
        if t.year < 1900:  # spreadsheets leave pre-1900 dates as text
            return text
        return f"{t.month}/{t.day}/{t.year % 100:02d} {t.hour}:{t.minute:02d}"

    tables = {k: v.copy() for k, v in synth_tables.items()}
    for col in ("ADMITTIME", "DISCHTIME", "DEATHTIME", "EDREGTIME", "EDOUTTIME"):
        tables["ADMISSIONS"][col] = tables["ADMISSIONS"][col].map(us)
    for col in ("DOB", "DOD", "DOD_HOSP"):
        tables["PATIENTS"][col] = tables["PATIENTS"][col].map(us)
    write_tables(tmp_path, tables)
    c = load_mimic3(tmp_path)
    assert_same_cohort(c, synth_cohort)
    assert any("two-digit years" in n for n in c.notes)


def test_error_bad_date(synth_dir: Path) -> None:
    path = synth_dir / "ICUSTAYS.csv"
    df = pd.read_csv(path, dtype=str)
    df.loc[1, "INTIME"] = "yesterday"
    df.to_csv(path, index=False)
    with pytest.raises(DataError) as err:
        load_mimic3(synth_dir)
    assert err.value.column == "INTIME" and err.value.rows == (2,)
    assert str(path) in str(err.value)


# ---------------------------------------------------------------------------------------------
# parse_times on hand-made values
# ---------------------------------------------------------------------------------------------


def parse(values: list[object], anchor: list[str] | None = None, **kw: object) -> pd.Series:
    raw = pd.Series(values, dtype="str")
    ref = None if anchor is None else pd.Series(pd.to_datetime(anchor), dtype="datetime64[us]")
    options: dict = {"rule": "nearest", "stats": TimeStats({}, {}), **kw}
    return parse_times(
        raw,
        rows=np.arange(1, len(values) + 1),
        path=Path("T.csv"),
        column="C",
        anchor=ref,
        table="T",
        **options,
    )


def test_parse_iso_and_full_month_first_years() -> None:
    got = parse(["2150-03-01 10:00:00", "3/1/2150 10:00", "2150-03-01", None, " "])
    want = [pd.Timestamp("2150-03-01 10:00")] * 2 + [pd.Timestamp("2150-03-01"), None, None]
    assert got.dtype == "datetime64[us]"
    pd.testing.assert_series_equal(got, pd.Series(want, dtype="datetime64[us]"))


def test_two_digit_year_nearest_the_anchor() -> None:
    stats = TimeStats({}, {})
    got = parse(["3/1/50 10:00", "12/31/99 23:59"], ["2150-03-02", "2200-01-01"], stats=stats)
    assert got.tolist() == [pd.Timestamp("2150-03-01 10:00"), pd.Timestamp("2199-12-31 23:59")]
    assert stats.two_digit == {"T.C": 2} and stats.unresolved == {}


def test_two_digit_year_latest_not_after_the_anchor() -> None:
    # A date of birth "1/1/50" anchored on an ICU stay in 2150 is 2150 at the latest, and
    # 2050 when the stay is in 2149 (a "nearest" rule would pick 2150, after the stay).
    got = parse(["1/1/50", "1/1/50"], ["2150-06-01", "2149-12-01"], rule="latest_not_after")
    assert got.tolist() == [pd.Timestamp("2150-01-01"), pd.Timestamp("2050-01-01")]


def test_two_digit_year_without_a_reference_time_is_missing_and_counted() -> None:
    stats = TimeStats({}, {})
    got = parse(["3/1/50 10:00", "3/2/50 10:00"], ["2150-03-02", None], stats=stats)
    assert got.iloc[0] == pd.Timestamp("2150-03-01 10:00") and pd.isna(got.iloc[1])
    assert stats.two_digit == {"T.C": 2} and stats.unresolved == {"T.C": 1}


def test_two_digit_year_without_any_anchor_is_an_error() -> None:
    with pytest.raises(DataError, match="two-digit years in the T table") as err:
        parse(["2150-01-01", "3/1/50"])
    assert (err.value.file, err.value.column, err.value.rows) == ("T.csv", "C", (2,))


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("yesterday", "unrecognised date/time in the T table"),
        ("2/30/2150 10:00", "invalid date in the T table"),
        ("2150-02-30 10:00:00", "invalid date in the T table"),
    ],
)
def test_bad_values_name_the_row(value: str, message: str) -> None:
    with pytest.raises(DataError, match=re.escape(message)) as err:
        parse(["2150-01-01 00:00:00", "2150-01-02 00:00:00", value])
    assert err.value.rows == (3,)
    assert value not in str(err.value)  # the row is named, its value never shown
