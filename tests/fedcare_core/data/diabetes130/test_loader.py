"""load_diabetes130: provenance, patients and strata, the checksum."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedcare_core.data.diabetes130 import DIABETES130_CSV_SHA256, load_diabetes130
from fedcare_core.errors import ChecksumError, DataError
from tests.fedcare_core.data.diabetes130.helpers import (
    FIXTURE,
    fixture_bytes,
    fixture_lines,
    load_tiny,
    make_zip,
    write_csv,
)


def test_source_sha256_is_the_csv_digest() -> None:
    c = load_tiny()
    assert c.source_sha256 == hashlib.sha256(fixture_bytes()).hexdigest()
    assert any("does NOT match" in n for n in c.notes)


def test_patient_codes_and_strata() -> None:
    c = load_tiny()
    raw = pd.read_csv(FIXTURE, dtype=str, keep_default_na=False)
    nbr = raw["patient_nbr"].to_numpy()
    assert c.patient.dtype == np.int64
    assert len(np.unique(c.patient)) == len(np.unique(nbr)) == 33
    # Same patient_nbr ⇔ same code.
    for i in range(len(nbr)):
        for j in range(len(nbr)):
            assert (nbr[i] == nbr[j]) == (c.patient[i] == c.patient[j])
    assert (pd.Series(nbr).value_counts() >= 2).sum() >= 5
    assert c.strata is not None
    assert c.strata.tolist() == raw["admission_source_id"].tolist()


def test_checksum_mismatch(tmp_path: Path) -> None:
    csv = tmp_path / "diabetic_data.csv"
    csv.write_bytes(fixture_bytes())
    actual = hashlib.sha256(fixture_bytes()).hexdigest()
    with pytest.raises(ChecksumError) as ei:
        load_diabetes130(csv)
    msg = str(ei.value)
    assert str(csv) in msg
    assert DIABETES130_CSV_SHA256 in msg and actual in msg
    assert "--no-verify" in msg
    assert isinstance(ei.value, DataError)


def test_checksum_mismatch_in_zip_names_member(tmp_path: Path) -> None:
    z = make_zip(tmp_path / "d.zip", "inner/diabetic_data.csv", fixture_bytes())
    with pytest.raises(ChecksumError) as ei:
        load_diabetes130(z)
    assert f"{z}:inner/diabetic_data.csv" in str(ei.value)


def test_extra_column_is_ignored_and_noted(tmp_path: Path) -> None:
    lines = [ln + (",note" if k == 0 else ",x") for k, ln in enumerate(fixture_lines())]
    csv = write_csv(tmp_path / "diabetic_data.csv", lines)
    c = load_tiny(csv)
    assert "note" not in c.features.columns
    assert any("ignored unexpected column(s): note" in n for n in c.notes)
