"""The tables the checks validate: readers, partition summaries, patient assignment (no GX)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from data_checks.tables import (
    FEATURES_FINITE_COLUMN,
    MIMIC3_REQUIRED_COLUMNS,
    SPLIT_COLUMN,
    PatientAssignment,
    assignment_table,
    client_partition_table,
    client_partition_tables,
    find_mimic3_table,
    hash_patients,
    read_mimic3_raw,
    recompute_assignment,
)
from fedcare_core.config import DataConfig
from fedcare_core.data.clients import SPLITS, build_federation
from fedcare_core.data.diabetes130 import DIABETES130_COLUMNS
from fedcare_core.data.diabetes130.dataset import SOURCE as DIABETES130
from fedcare_core.data.mimic3 import schema
from fedcare_core.errors import DataError
from tests.fedcare_core.data.mimic3.synthetic import write_synthetic_mimic3
from tests.fedcare_core.synthetic import PARTITION, make_cohort

TINY_CSV = (
    Path(__file__).parents[1] / "fedcare_core" / "data" / "fixtures" / "diabetic_data_tiny.csv"
)


def test_mimic3_required_columns_are_what_the_loader_reads() -> None:
    specs = {
        s.name: s for s in (schema.ADMISSIONS, schema.PATIENTS, schema.ICUSTAYS, schema.LABEVENTS)
    }
    assert set(specs) == set(MIMIC3_REQUIRED_COLUMNS)
    for name, spec in specs.items():
        required = set(spec.columns) - set(spec.optional)
        assert set(MIMIC3_REQUIRED_COLUMNS[name]) == required, name


def test_diabetes_raw_is_text_with_question_marks_missing_and_none_kept() -> None:
    from data_checks.declared import DeclaredChecks

    checks = DeclaredChecks(DIABETES130)
    (df,) = checks.read(TINY_CSV).values()
    assert list(df.columns) == list(DIABETES130_COLUMNS)
    assert all(pd.api.types.is_string_dtype(df[c]) for c in df.columns)
    assert df["weight"].isna().any()  # "?" → missing
    assert (df["max_glu_serum"] == "None").any()  # a real category, not missing
    assert df.loc[0, "diag_1"] == "250.83"  # codes stay text


def test_mimic3_raw_reads_lower_case_gzip_tables_with_upper_case_headers(tmp_path: Path) -> None:
    write_synthetic_mimic3(tmp_path, n_patients=4, lowercase=True, gzip=True)
    tables = read_mimic3_raw(tmp_path, max_event_rows=5)
    assert list(tables) == list(MIMIC3_REQUIRED_COLUMNS)
    assert "ROW_ID" in tables["ICUSTAYS"].columns  # small tables in full
    assert set(tables["LABEVENTS"].columns) == set(MIMIC3_REQUIRED_COLUMNS["LABEVENTS"])
    assert len(tables["LABEVENTS"]) == 5


def test_missing_mimic3_table_is_a_data_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="ICUSTAYS"):
        find_mimic3_table(tmp_path, "ICUSTAYS")


def test_patient_hashes_are_keyed_and_consistent() -> None:
    patient = np.array([5, 7, 5, 9])
    a = hash_patients(patient, b"k" * 16)
    assert a[0] == a[2] and len(set(a)) == 3
    assert not set(a) & set(hash_patients(patient, b"j" * 16))
    assert not any("5" == h or "7" == h for h in a)


def test_assignment_table_has_one_row_per_patient_place() -> None:
    a = PatientAssignment(
        patient=np.array([1, 1, 2, 3, 3]),
        client=np.array([0, 0, 1, 1, 2]),
        split=np.array(["train", "train", "test", "val", "val"], dtype=object),
    )
    t = assignment_table(a, salt=b"s" * 16)
    assert list(t.columns) == ["patient_hash", "client", "split"]
    assert len(t) == 4  # patient 1 once; patient 3 at two clients → two rows
    assert t["patient_hash"].duplicated().sum() == 1
    with pytest.raises(ValueError, match="same length"):
        PatientAssignment(patient=np.array([1]), client=np.array([0, 1]), split=np.array(["a"]))


@pytest.mark.parametrize("max_patients", [None, 150])
def test_recomputed_assignment_matches_the_federation(max_patients: int | None) -> None:
    cohort = make_cohort(200)
    cfg = DataConfig(clients=3, max_patients=max_patients)
    fed = build_federation(cohort, PARTITION, cfg, seed=4)
    a = recompute_assignment(cohort, cfg, seed=4)
    if max_patients is not None:
        assert len(np.unique(a.patient)) == max_patients
        keep = np.isin(cohort.patient, a.patient)
        labels = cohort.labels.loc[keep].reset_index(drop=True)
    else:
        labels = cohort.labels
    for client in fed.clients:
        for split in SPLITS:
            rows = (a.client == client.client_id) & (a.split == split)
            expected = labels.loc[rows, list(client.objectives)].to_numpy(dtype=np.float32)
            np.testing.assert_array_equal(client.split(split).y, expected)


def test_client_partition_table_summarises_labels_and_finiteness() -> None:
    fed = build_federation(make_cohort(120), PARTITION, DataConfig(clients=2), seed=0)
    client = fed.clients[0]
    t = client_partition_table(client)
    assert list(t.columns) == [SPLIT_COLUMN, FEATURES_FINITE_COLUMN] + [
        f"label_{o}" for o in client.objectives
    ]
    assert len(t) == sum(client.split(s).n for s in SPLITS)
    assert t[FEATURES_FINITE_COLUMN].all()
    bad = dataclasses.replace(client.train, x_common=client.train.x_common.copy())
    bad.x_common[0, 0] = np.inf
    t_bad = client_partition_table(dataclasses.replace(client, train=bad))
    assert not t_bad[FEATURES_FINITE_COLUMN].iloc[0]
    assert list(client_partition_tables(fed)) == ["client_00", "client_01"]
