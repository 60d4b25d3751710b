"""The real file (skipped when ../shared/datasets is absent)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedcare_core.data.cohort import Cohort
from fedcare_core.data.diabetes130 import (
    DIABETES130_CSV_SHA256,
    DIABETES130_PARTITION,
    EXCLUDED_COLUMNS,
    find_diabetes130,
    load_diabetes130,
)

N_REAL = 101_766
N_PATIENTS = 71_518


@pytest.fixture(scope="module")
def real(data_dir: Path) -> Cohort:
    return load_diabetes130(data_dir)


@pytest.mark.realdata
def test_real_counts_and_checksum(real: Cohort) -> None:
    assert real.n_rows == N_REAL
    assert len(np.unique(real.patient)) == N_PATIENTS
    assert real.patient.min() == 0 and real.patient.max() == N_PATIENTS - 1
    assert real.source_sha256 == DIABETES130_CSV_SHA256
    assert real.features.shape == (N_REAL, 46)


@pytest.mark.realdata
def test_real_no_leakage_columns(real: Cohort) -> None:
    for col in EXCLUDED_COLUMNS:
        assert col not in real.features.columns
    assert set(real.features.columns) == set(DIABETES130_PARTITION.all_features)


@pytest.mark.realdata
def test_real_label_prevalence(real: Cohort) -> None:
    early = real.labels["early_discharge"]
    readm = real.labels["readmission"]
    assert early.notna().all()
    assert 0.45 < early.mean() < 0.52  # measured 0.4833
    assert readm.isna().sum() == 2_423  # 1,652 expired + 771 hospice
    assert 0.10 < readm.mean() < 0.125  # measured 0.1139
    los = real.labels["los"]
    assert los.min() == 1 and los.max() == 14
    assert 4.3 < los.mean() < 4.5  # measured 4.396


@pytest.mark.realdata
def test_real_categories(real: Cohort) -> None:
    f = real.features
    assert set(f["A1Cresult"]) == {"None", ">8", "Norm", ">7"}
    assert set(f["max_glu_serum"]) == {"None", "Norm", ">200", ">300"}
    assert (f["A1Cresult"] == "None").sum() == 84_748
    assert f["race"].isna().sum() == 2_273
    assert f["diag_1"].isna().sum() == 21
    assert f["diag_1"].value_counts().index[0] == "circulatory"
    assert set(f["age"]) == {5.0 + 10 * k for k in range(10)}
    assert real.strata is not None and real.strata.value_counts().index[0] == "7"


@pytest.mark.realdata
def test_real_any_readmission(data_dir: Path) -> None:
    c = load_diabetes130(data_dir, readmission="any")
    assert 0.45 < c.labels["readmission"].mean() < 0.49  # measured 0.4713


@pytest.mark.realdata
def test_real_load_via_zip_csv_and_dir(data_dir: Path, real: Cohort, tmp_path: Path) -> None:
    zpath = find_diabetes130(data_dir)
    assert zpath.suffix == ".zip"
    with zipfile.ZipFile(zpath) as zf:
        member = next(n for n in zf.namelist() if n.endswith("/diabetic_data.csv"))
        csv = tmp_path / "diabetic_data.csv"
        csv.write_bytes(zf.read(member))
    # How long loading takes is a benchmark's question (docs/BENCHMARKS.md), not a test's.
    from_zip = load_diabetes130(zpath)
    from_csv = load_diabetes130(csv)
    for c in (from_zip, from_csv):
        pd.testing.assert_frame_equal(c.features, real.features)
        pd.testing.assert_frame_equal(c.labels, real.labels)
        assert c.source_sha256 == DIABETES130_CSV_SHA256
