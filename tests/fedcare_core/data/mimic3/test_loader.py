"""load_mimic3 end to end: the demo, the synthetic full-schema tables and options."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedcare_core.data.cohort import Cohort
from fedcare_core.data.mimic3 import MIMIC3_FEATURES, load_mimic3
from fedcare_core.errors import DataError
from tests.fedcare_core.data.mimic3.helpers import ID_WORDS, VITALS, assert_same_cohort
from tests.fedcare_core.data.mimic3.synthetic import write_synthetic_mimic3


@pytest.mark.realdata
def test_demo_loads(data_dir: Path) -> None:
    demo = data_dir / "mimic3-demo"
    c = load_mimic3(demo)
    assert c.dataset == "mimic3"
    assert [o.name for o in c.objectives] == ["mortality", "readmission", "los"]
    assert [o.kind for o in c.objectives] == ["binary", "binary", "regression"]
    assert "ICUSTAYS: 136 ICU stays read" in c.notes
    assert c.n_rows == 135  # one stay of a 17-year-old excluded
    assert "excluded 1 stays of patients younger than 18 at ICU admission" in c.notes
    assert list(c.features.columns) == list(MIMIC3_FEATURES)
    assert not any(w in col.lower() for col in c.features.columns for w in ID_WORDS)
    assert all(c.features[f].dtype == np.float64 for f in c.numeric_features)
    assert all(pd.api.types.is_string_dtype(c.features[f]) for f in c.categorical_features)
    # Ages are plausible: two-digit-year dates in the demo's ADMISSIONS/PATIENTS resolved.
    assert c.features["age"].between(18, 91.4).all()
    assert c.features["age"].median() > 50
    # Labels.
    mort, readm, los = (c.labels[n] for n in ("mortality", "readmission", "los"))
    assert set(mort.unique()) == {0.0, 1.0}
    assert 0.1 < mort.mean() < 0.6
    assert readm[mort == 1].isna().all() and readm[mort == 0].notna().all()
    assert 0.02 < readm.mean() < 0.4
    assert (los.dropna() > 0).all() and 1 < los.median() < 10
    # No CHARTEVENTS in the demo: vitals exist as all-NaN floats, labs mostly present.
    assert c.features[VITALS].isna().all().all()
    assert any("CHARTEVENTS absent" in n for n in c.notes)
    assert c.features["creatinine_mean"].notna().mean() > 0.8
    # Keys and provenance.
    assert len(np.unique(c.patient)) == 99
    assert c.strata is not None and c.strata.notna().all()
    sums = dict(
        line.split()[::-1] for line in (demo / "SHA256SUMS").read_text().splitlines() if line
    )
    assert c.source_sha256 == sums["ICUSTAYS.csv"]


def test_synthetic_with_chartevents(synth_cohort: Cohort, synth_tables: dict) -> None:
    c = synth_cohort
    assert c.n_rows == len(synth_tables["ICUSTAYS"]) - 1  # the minor is excluded
    assert any("younger than 18" in n for n in c.notes)
    assert list(c.features.columns) == list(MIMIC3_FEATURES)
    vitals = c.features[VITALS].to_numpy()
    assert np.isfinite(vitals).all()
    # Fahrenheit temperatures converted, GCS totals in range, ERROR = 1 rows (HR 280) and rows
    # without ICUSTAY_ID (HR 150) ignored.
    assert c.features["temp_mean"].between(35, 39).all()
    assert c.features["gcs_min"].between(3, 15).all()
    assert c.features["hr_max"].max() < 150
    assert any("ERROR = 1" in n for n in c.notes)
    # The shifted DOB (patient 1, "300 years old") gets age 91.4.
    assert (c.features["age"] == 91.4).sum() >= 1
    assert c.features["age"].max() == 91.4
    # Readmission is NaN exactly for in-hospital deaths.
    mort, readm = c.labels["mortality"], c.labels["readmission"]
    assert readm.isna().equals(mort == 1)
    assert 0 < np.nanmean(readm) < 1
    assert c.strata is not None and c.strata.notna().all()
    assert c.patient.dtype == np.int64 and c.patient.min() == 0
    assert len(np.unique(c.patient)) == 29


def test_min_age_option(tmp_path: Path) -> None:
    write_synthetic_mimic3(tmp_path, n_patients=4, with_chartevents=False)
    adults = load_mimic3(tmp_path)
    everyone = load_mimic3(tmp_path, min_age=0)
    assert everyone.n_rows > adults.n_rows
    assert everyone.features["age"].min() == pytest.approx(15, abs=0.1)


def test_chunksize_does_not_matter(tmp_path: Path) -> None:
    write_synthetic_mimic3(tmp_path, n_patients=5, seed=3)
    small = load_mimic3(tmp_path, chunksize=7)
    large = load_mimic3(tmp_path, chunksize=10_000_000)
    assert_same_cohort(small, large)
    assert small.notes == large.notes
    assert np.isfinite(small.features[VITALS].to_numpy()).all()


def test_without_chartevents(tmp_path: Path, synth_cohort: Cohort) -> None:
    write_synthetic_mimic3(tmp_path, n_patients=30, seed=0, with_chartevents=False)
    c = load_mimic3(tmp_path)
    assert list(c.features.columns) == list(MIMIC3_FEATURES)
    assert all(c.features[v].dtype == np.float64 for v in VITALS)
    assert c.features[VITALS].isna().all().all()
    assert any("CHARTEVENTS absent" in n for n in c.notes)
    others = [f for f in MIMIC3_FEATURES if f not in VITALS]
    pd.testing.assert_frame_equal(c.features[others], synth_cohort.features[others])
    pd.testing.assert_frame_equal(c.labels, synth_cohort.labels)


def test_error_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="does not exist"):
        load_mimic3(tmp_path / "nowhere")


def test_error_chunksize_not_positive(synth_dir: Path) -> None:
    with pytest.raises(ValueError, match="chunksize must be positive, got 0"):
        load_mimic3(synth_dir, chunksize=0)
