"""Finding the file (directory, zip, CSV path) and reading archives."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedcare_core.data.diabetes130 import find_diabetes130, load_diabetes130
from fedcare_core.errors import DataError
from tests.fedcare_core.data.diabetes130.helpers import fixture_bytes, load_tiny, make_zip


def test_load_via_dir_zip_and_csv_agree(tmp_path: Path) -> None:
    data = fixture_bytes()
    csv = tmp_path / "plain" / "nested" / "diabetic_data.csv"
    csv.parent.mkdir(parents=True)
    csv.write_bytes(data)
    zdir = tmp_path / "zipped"
    zdir.mkdir()
    zpath = make_zip(
        zdir / "dataset_diabetes.zip",
        "dataset_diabetes/diabetic_data.csv",
        data,
        {"dataset_diabetes/IDs_mapping.csv": b"admission_type_id,description\r\n1,Emergency\r\n"},
    )
    assert find_diabetes130(tmp_path / "plain") == csv
    assert find_diabetes130(zdir) == zpath
    cohorts = [load_tiny(tmp_path / "plain"), load_tiny(csv), load_tiny(zdir), load_tiny(zpath)]
    for c in cohorts[1:]:
        pd.testing.assert_frame_equal(c.features, cohorts[0].features)
        pd.testing.assert_frame_equal(c.labels, cohorts[0].labels)
        np.testing.assert_array_equal(c.patient, cohorts[0].patient)
        assert c.source_sha256 == cohorts[0].source_sha256
    # No file was extracted next to the archive.
    assert sorted(p.name for p in zdir.iterdir()) == ["dataset_diabetes.zip"]


def test_find_prefers_csv_over_zip(tmp_path: Path) -> None:
    make_zip(tmp_path / "a.zip", "diabetic_data.csv", fixture_bytes())
    csv = tmp_path / "deeper" / "diabetic_data.csv"
    csv.parent.mkdir()
    csv.write_bytes(fixture_bytes())
    assert find_diabetes130(tmp_path) == csv


def test_find_skips_unrelated_zips(tmp_path: Path) -> None:
    make_zip(tmp_path / "a_other.zip", "something.csv", b"x\n1\n")
    (tmp_path / "b_broken.zip").write_bytes(b"not a zip")
    good = make_zip(tmp_path / "c.zip", "x/y/diabetic_data.csv", fixture_bytes())
    assert find_diabetes130(tmp_path) == good


def test_find_nothing_names_directory(tmp_path: Path) -> None:
    (tmp_path / "readme.txt").write_text("hello")
    with pytest.raises(DataError) as ei:
        find_diabetes130(tmp_path)
    assert str(tmp_path) in str(ei.value)
    assert "diabetic_data.csv" in str(ei.value)


def test_find_missing_path(tmp_path: Path) -> None:
    with pytest.raises(DataError) as ei:
        load_diabetes130(tmp_path / "nope")
    assert str(tmp_path / "nope") in str(ei.value)


def test_zip_without_member(tmp_path: Path) -> None:
    z = make_zip(tmp_path / "x.zip", "other.csv", b"a\n1\n")
    with pytest.raises(DataError) as ei:
        load_diabetes130(z)
    assert str(z) in str(ei.value) and "diabetic_data.csv" in str(ei.value)


def test_truncated_zip(tmp_path: Path) -> None:
    full = make_zip(tmp_path / "full.zip", "d/diabetic_data.csv", fixture_bytes() * 20)
    raw = full.read_bytes()
    cut = tmp_path / "cut.zip"
    cut.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(DataError) as ei:
        load_tiny(cut)
    assert str(cut) in str(ei.value)


def test_corrupted_zip_member(tmp_path: Path) -> None:
    full = make_zip(tmp_path / "c.zip", "diabetic_data.csv", fixture_bytes())
    raw = bytearray(full.read_bytes())
    # Flip bytes inside the compressed data (after the 30-byte local header and the name).
    start = 30 + len("diabetic_data.csv") + 10
    for k in range(start, start + 40):
        raw[k] ^= 0xFF
    full.write_bytes(bytes(raw))
    with pytest.raises(DataError) as ei:
        load_tiny(full)
    assert str(full) in str(ei.value)
