"""The two MIMIC-III cohorts on hand-made stays whose fate under each rule is counted by hand."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from fedcare_core.data.mimic3 import load_mimic3
from fedcare_core.errors import DataError
from tests.fedcare_core.data.mimic3.synthetic import (
    Admission,
    add_lab,
    add_patient,
    synthetic_mimic3_tables,
    write_tables,
)

CREATININE = 50912
ADULT = "2100-01-01 00:00:00"
T0 = pd.Timestamp("2160-03-01 12:00:00")


def _admission(hadm: int, *stays: tuple[int, float]) -> Admission:
    """An admission whose ICU stays start 2 h, 10 days, … after T0, each with its LOS (days)."""
    return Admission(
        hadm=hadm,
        admit=str(T0 - pd.Timedelta(hours=2)),
        disch=str(T0 + pd.Timedelta(days=30)),
        stays=tuple(
            (icustay, str(T0 + pd.Timedelta(days=10 * i)), los)
            for i, (icustay, los) in enumerate(stays)
        ),
    )


#: subject → (ICU stays as (ICUSTAY_ID, LOS days), hours after INTIME of its one lab value).
CASES: dict[int, tuple[tuple[tuple[int, float], ...], float]] = {
    1: (((11, 3.0),), 30.0),  # kept by both; its lab is after 24 h and within 48 h
    2: (((21, 3.0),), 2.0),  # care-unit transfer
    3: (((31, 3.0),), 2.0),  # ward transfer
    4: (((41, 3.0), (42, 3.0)), 2.0),  # two stays in one admission
    5: (((51, 3.0), (52, 3.0)), 2.0),  # two stays, the second a transfer: the first is single
    6: (((61, 1.5),), 2.0),  # 36 h: too short
    7: (((71, 3.0),), 60.0),  # no event in the first 48 h
    8: (((81, 2.0),), 2.0),  # exactly 48 h: kept
}
TRANSFERS = {21: "LAST_CAREUNIT", 31: "LAST_WARDID", 52: "LAST_CAREUNIT"}


def _tables() -> dict[str, pd.DataFrame]:
    base = synthetic_mimic3_tables(n_patients=1, seed=3, with_chartevents=False)
    tables = {name: frame.iloc[0:0] for name, frame in base.items()}
    for subject, (stays, lab_hours) in CASES.items():
        hadm = 100 * subject
        add_patient(tables, subject=subject, dob=ADULT, admissions=[_admission(hadm, *stays)])
        for i, _ in enumerate(stays):
            at = T0 + pd.Timedelta(days=10 * i, hours=lab_hours)
            add_lab(tables, subject=subject, hadm=hadm, itemid=CREATININE, charttime=at, value=1.2)
    # a minor: left out of both cohorts
    add_patient(
        tables, subject=9, dob="2155-01-01 00:00:00", admissions=[_admission(900, (91, 3.0))]
    )
    icu = tables["ICUSTAYS"]
    for icustay, column in TRANSFERS.items():
        row = icu["ICUSTAY_ID"] == icustay
        icu.loc[row, column] = "CCU" if column == "LAST_CAREUNIT" else 999
        if column == "LAST_CAREUNIT":
            icu.loc[row, "FIRST_CAREUNIT"] = "MICU"
    return tables


def test_each_cohort_keeps_the_hand_counted_stays(tmp_path: Path) -> None:
    write_tables(tmp_path, _tables())
    every = load_mimic3(tmp_path)
    benchmark = load_mimic3(tmp_path, cohort="benchmark-ihm")
    # all-adult-24h: the 11 stays less the minor's
    assert every.n_rows == 10
    # benchmark-ihm: 11 (single after the transfer rule), 51 and 81 (48 h exactly)
    assert benchmark.n_rows == 3
    assert benchmark.labels["los"].tolist() == [3.0, 3.0, 2.0]
    notes = "\n".join(benchmark.notes)
    for line in (
        "excluded 3 stays with a ward or care-unit transfer",
        "excluded 2 stays of admissions with more than one ICU stay",
        "excluded 1 stays shorter than 48 h",
        "excluded 1 stays without a lab or vital-sign value in the first 48 h; 3 stays kept",
        "LABEVENTS: 3 lab values in the first 48 h used",
    ):
        assert line in notes
    # The window: stay 11's lab (30 h after INTIME) is a feature at 48 h, not at 24 h.
    assert pd.isna(every.features["creatinine_mean"].iloc[0])
    assert benchmark.features["creatinine_mean"].iloc[0] == pytest.approx(1.2)


def test_the_benchmark_cohort_needs_the_ward_columns(tmp_path: Path) -> None:
    tables = _tables()
    tables["ICUSTAYS"] = tables["ICUSTAYS"].drop(columns=["FIRST_WARDID", "LAST_WARDID"])
    write_tables(tmp_path, tables)
    assert load_mimic3(tmp_path).n_rows == 10  # the default cohort does not read them
    with pytest.raises(DataError, match="FIRST_WARDID, LAST_WARDID") as caught:
        load_mimic3(tmp_path, cohort="benchmark-ihm")
    assert "ICUSTAYS" in str(caught.value)


@pytest.mark.realdata
def test_the_demo_benchmark_cohort_is_within_the_benchmark_counts(data_dir: Path) -> None:
    demo = data_dir / "mimic3-demo"
    every = load_mimic3(demo)
    benchmark = load_mimic3(demo, cohort="benchmark-ihm")
    # 136 demo stays; the benchmark's rules leave 115, 58 of them at least 48 h long.
    assert benchmark.n_rows < every.n_rows
    assert 0 < benchmark.n_rows <= 58
    assert "benchmark-ihm: excluded 57 stays shorter than 48 h (ICUSTAYS.LOS)" in benchmark.notes


def _listfiles(root: Path, train: list[str], test: list[str]) -> Path:
    for part, stays in (("train", train), ("test", test)):
        (root / part).mkdir(parents=True)
        rows = "".join(f"{s},0\n" for s in stays)
        (root / part / "listfile.csv").write_text("stay,y_true\n" + rows)
    return root


def test_the_benchmark_listfiles_fix_the_test_patients(tmp_path: Path) -> None:
    write_tables(tmp_path / "mimic", _tables())
    task = _listfiles(
        tmp_path / "ihm", ["1_episode1_timeseries.csv", "99_episode1_timeseries.csv"],
        ["5_episode1_timeseries.csv"],
    )  # fmt: skip
    cohort = load_mimic3(tmp_path / "mimic", cohort="benchmark-ihm", benchmark_split=task)
    # subject 8 is in neither listfile; subject 99 is not in the cohort
    assert cohort.n_rows == 2
    assert cohort.test_patients is not None and cohort.test_patients.tolist() == [1]
    assert "benchmark split: 1 train and 1 test stays; excluded 1 stays" in "\n".join(cohort.notes)


@pytest.mark.parametrize(
    ("train", "test", "message"),
    [
        (
            ["1_episode1_timeseries.csv", "oops"],
            ["5_episode1_timeseries.csv"],
            r"'stay'; row 2: stay must",
        ),
        (["1_episode1_timeseries.csv"], ["1_episode2_timeseries.csv"], "in both the train"),
        (["1_episode1_timeseries.csv"], ["99_episode1_timeseries.csv"], "of the test listfile"),
    ],
)
def test_a_bad_listfile_is_refused_naming_file_and_rows(
    tmp_path: Path, train: list[str], test: list[str], message: str
) -> None:
    write_tables(tmp_path / "mimic", _tables())
    task = _listfiles(tmp_path / "ihm", train, test)
    with pytest.raises(DataError, match=message) as caught:
        load_mimic3(tmp_path / "mimic", cohort="benchmark-ihm", benchmark_split=task)
    assert "listfile.csv" in str(caught.value) and "1_episode" not in str(caught.value)


def test_listed_subjects_without_a_stay_are_counted_in_a_note(tmp_path: Path) -> None:
    write_tables(tmp_path / "mimic", _tables())
    listed = [
        "1_episode1_timeseries.csv",
        "2_episode1_timeseries.csv",
        "99_episode1_timeseries.csv",
    ]
    test = ["5_episode1_timeseries.csv", "77_episode1_timeseries.csv"]
    task = _listfiles(tmp_path / "ihm", listed, test)
    cohort = load_mimic3(tmp_path / "mimic", cohort="benchmark-ihm", benchmark_split=task)
    # subject 2 is in the tables but a transfer; 99 and 77 are in no table
    assert (
        "benchmark split: listed subjects without a stay in this cohort: 3 of 5 (2 train, 1 test); "
        "2 not in the tables, 1 left out by its rules; the benchmark's test set is reproduced "
        "only in part"
    ) in cohort.notes


def test_every_listed_subject_with_a_stay_adds_no_note(tmp_path: Path) -> None:
    write_tables(tmp_path / "mimic", _tables())
    task = _listfiles(
        tmp_path / "ihm", ["1_episode1_timeseries.csv"], ["5_episode1_timeseries.csv"]
    )
    cohort = load_mimic3(tmp_path / "mimic", cohort="benchmark-ihm", benchmark_split=task)
    assert not any("without a stay" in note for note in cohort.notes)


def test_cohort_rules_that_keep_no_stay_are_named_with_their_counts(tmp_path: Path) -> None:
    tables = _tables()
    tables["ICUSTAYS"]["LOS"] = 1.0  # every stay shorter than the benchmark's 48 h
    write_tables(tmp_path, tables)
    with pytest.raises(DataError) as caught:
        load_mimic3(tmp_path, cohort="benchmark-ihm")
    message = str(caught.value)
    assert "ICUSTAYS" in message and "\n" not in message
    assert "the benchmark-ihm cohort's rules keep none of the 11 ICU stays" in message
    assert "excluded 3 stays with a ward or care-unit transfer" in message
    assert "6 stays shorter than 48 h (ICUSTAYS.LOS)" in message


def test_an_age_limit_that_keeps_no_stay_names_it(tmp_path: Path) -> None:
    write_tables(tmp_path, _tables())
    with pytest.raises(DataError) as caught:
        load_mimic3(tmp_path, min_age=150)
    expected = "of 11 stays, 11 stays of patients younger than 150 at ICU admission"
    assert expected in str(caught.value)
