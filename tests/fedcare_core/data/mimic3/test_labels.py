"""Mortality, readmission and LOS labels on hand-made admissions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedcare_core.data.cohort import Cohort
from fedcare_core.data.mimic3 import load_mimic3
from fedcare_core.data.mimic3.labels import days_to_next_admission
from fedcare_core.data.mimic3.stays import join_stays
from fedcare_core.errors import DataError
from tests.fedcare_core.data.mimic3.synthetic import (
    Admission,
    add_patient,
    synthetic_mimic3_tables,
    write_tables,
)


def _constructed(tmp_path: Path) -> tuple[Cohort, dict[str, pd.DataFrame]]:
    tables = synthetic_mimic3_tables(n_patients=3, seed=1, with_chartevents=False)
    # A: readmitted 10 days after discharge (the second admission has no ICU stay).
    add_patient(
        tables,
        subject=9001,
        dob="2090-01-01 00:00:00",
        admissions=[
            Admission(
                hadm=900101,
                admit="2150-03-01 10:00:00",
                disch="2150-03-10 12:00:00",
                stays=((990101, "2150-03-01 12:00:00", 2.5),),
            ),
            Admission(hadm=900102, admit="2150-03-20 12:00:00", disch="2150-03-25 12:00:00"),
        ],
    )
    # B: next admission 40 days after discharge; that admission's own stay has LOS 0.
    add_patient(
        tables,
        subject=9002,
        dob="2100-06-01 00:00:00",
        admissions=[
            Admission(
                hadm=900201,
                admit="2160-01-01 08:00:00",
                disch="2160-01-05 08:00:00",
                stays=((990201, "2160-01-01 09:00:00", 1.5),),
            ),
            Admission(
                hadm=900202,
                admit="2160-02-14 08:00:00",
                disch="2160-02-20 08:00:00",
                stays=((990202, "2160-02-14 10:00:00", 0.0),),
            ),
        ],
    )
    # C: died in hospital; a later admission record must not make it a readmission.
    add_patient(
        tables,
        subject=9003,
        dob="2110-06-01 00:00:00",
        admissions=[
            Admission(
                hadm=900301,
                admit="2170-05-01 08:00:00",
                disch="2170-05-09 08:00:00",
                expire=1,
                stays=((990301, "2170-05-01 09:00:00", None),),
            ),
        ],
    )
    write_tables(tmp_path, tables)
    return load_mimic3(tmp_path), tables


def test_readmission_and_los_labels_hand_checked(tmp_path: Path) -> None:
    c, tables = _constructed(tmp_path)
    ids = tables["ICUSTAYS"]["ICUSTAY_ID"].tolist()
    ages = c.features["age"].to_numpy()
    assert len(ids) == c.n_rows + 1  # the minor (patient 0) is excluded
    order = [
        i
        for i in ids
        if i
        not in tables["ICUSTAYS"]
        .loc[tables["ICUSTAYS"]["SUBJECT_ID"] == 1000, "ICUSTAY_ID"]
        .tolist()
    ]

    def lab(icustay: int, name: str) -> float:
        return float(c.labels.loc[order.index(icustay), name])

    assert lab(990101, "readmission") == 1.0  # 10 days after discharge
    assert lab(990201, "readmission") == 0.0  # 40 days after discharge
    assert lab(990202, "readmission") == 0.0  # last admission
    assert np.isnan(lab(990301, "readmission"))  # died
    assert lab(990301, "mortality") == 1.0 and lab(990101, "mortality") == 0.0
    assert lab(990101, "los") == 2.5
    assert np.isnan(lab(990202, "los"))  # LOS 0: out of the LOS objective, still in the cohort
    assert np.isnan(lab(990301, "los"))  # LOS missing
    assert ages[order.index(990101)] == pytest.approx(60.16, abs=0.01)
    # and one with LOS missing; the exclusion is the objective's own (MIMIC-III has no variants)
    assert "los: 1 rows have no label (LOS <= 0); exclusion: default" in c.notes


def test_readmission_window_edges(tmp_path: Path) -> None:
    tables = synthetic_mimic3_tables(n_patients=2, seed=2, with_chartevents=False)
    disch = pd.Timestamp("2150-03-10 12:00:00")
    for k, gap in enumerate([pd.Timedelta(days=30), pd.Timedelta(days=30, minutes=1)]):
        nxt = disch + gap
        add_patient(
            tables,
            subject=9100 + k,
            dob="2090-01-01 00:00:00",
            admissions=[
                Admission(
                    hadm=910000 + 10 * k,
                    admit="2150-03-01 10:00:00",
                    disch=str(disch),
                    stays=((991000 + 10 * k, "2150-03-01 12:00:00", 2.0),),
                ),
                Admission(
                    hadm=910001 + 10 * k, admit=str(nxt), disch=str(nxt + pd.Timedelta(days=3))
                ),
            ],
        )
    write_tables(tmp_path, tables)
    c = load_mimic3(tmp_path)
    assert c.labels["readmission"].iloc[-2] == 1.0  # exactly 30 days: readmitted
    assert c.labels["readmission"].iloc[-1] == 0.0  # 30 days and a minute: not


# ---------------------------------------------------------------------------------------------
# days_to_next_admission and join_stays on hand-made frames
# ---------------------------------------------------------------------------------------------


def test_days_to_next_admission_on_a_tiny_admissions_table() -> None:
    t = pd.Timestamp
    adm = pd.DataFrame(
        {
            "SUBJECT_ID": [1.0, 1.0, 1.0, 2.0, 3.0, 3.0],
            "HADM_ID": [10.0, 11.0, 12.0, 20.0, 30.0, 31.0],
            "ADMITTIME": [t("2150-01-01"), t("2150-03-07"), t("2150-02-05 12:00")]
            + [t("2150-01-01")] * 3,
            "DISCHTIME": [
                *(t(d) for d in ("2150-01-10", "2150-03-10", "2150-02-10", "2150-01-05")),
                t("2150-01-03"),
                None,
            ],
        }
    )
    got = days_to_next_admission(adm, np.array([10.0, 11.0, 12.0, 20.0, 30.0, 31.0, 10.0]))
    # 10: the nearest later admission (12), 26.5 days on, not 11; 11: none after; 12: 11, 25
    # days on; 20: the patient's only admission; 30: the other admission began before this
    # discharge; 31: no discharge time; a repeated admission (two stays) gets its days twice.
    np.testing.assert_array_equal(got, [26.5, np.nan, 25.0, np.nan, np.nan, np.nan, 26.5])


def test_join_stays_excludes_and_notes(tmp_path: Path) -> None:
    t = pd.Timestamp
    icu = pd.DataFrame(
        {
            "SUBJECT_ID": [1.0, 2.0, 3.0, 4.0],
            "HADM_ID": [10.0, 20.0, 30.0, 99.0],
            "ICUSTAY_ID": [100.0, 200.0, 300.0, 400.0],
            "INTIME": [t("2150-01-01"), t("2150-01-01"), None, t("2150-01-01")],
            "_ROW": [1, 2, 3, 4],
        }
    )
    adm = pd.DataFrame({"HADM_ID": [10.0, 20.0, 30.0], "_ROW": [1, 2, 3]})
    for col in ("HOSPITAL_EXPIRE_FLAG", "ADMITTIME", "ADMISSION_TYPE", "ADMISSION_LOCATION"):
        adm[col] = None
    for col in ("INSURANCE", "MARITAL_STATUS", "ETHNICITY"):
        adm[col] = None
    pat = pd.DataFrame(
        {
            "SUBJECT_ID": [1.0, 2.0, 3.0, 4.0],
            "GENDER": ["F", "M", "F", "M"],
            "DOB": [t("2100-01-01"), t("2140-01-01"), t("2100-01-01"), t("2100-01-01")],
            "_ROW": [1, 2, 3, 4],
        }
    )
    stays, age, notes = join_stays(icu, adm, pat, min_age=18, root=tmp_path)
    assert stays["ICUSTAY_ID"].tolist() == [100.0] and list(stays.index) == [0]
    assert stays[["_ROW", "_ADM_ROW", "_PAT_ROW"]].values.tolist() == [[1, 1, 1]]  # source rows
    assert age.tolist() == [pytest.approx(50.0, abs=0.01)]
    assert notes == [
        "excluded 1 stays without an ADMISSIONS row",
        "excluded 1 stays with missing INTIME or DOB",
        "excluded 1 stays of patients younger than 18 at ICU admission",
        "cohort: 1 ICU stays of 1 patients (1 admissions), age >= 18",
    ]
    with pytest.raises(DataError, match="no ICU stay"):
        join_stays(icu, adm, pat, min_age=60, root=tmp_path)
