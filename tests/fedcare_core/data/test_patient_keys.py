"""A site file's patients as its own identifiers: what tells two sites' patients apart."""

from __future__ import annotations

import zipfile
from pathlib import Path

from fedcare_core.data.patient_keys import patient_keys
from tests.fedcare_core.data.diabetes130.helpers import FIXTURE, fixture_lines, write_csv
from tests.fedcare_core.data.mimic3.synthetic import write_synthetic_mimic3


def _patients(lines: list[str]) -> set[str]:
    column = lines[0].split(",").index("patient_nbr")
    return {line.split(",")[column] for line in lines[1:]}


def test_a_diabetes_file_gives_its_patient_nbr_values_in_a_csv_or_a_zip(tmp_path: Path) -> None:
    lines = fixture_lines()
    keys = patient_keys("diabetes130", FIXTURE)
    assert set(keys.tolist()) == _patients(lines) and len(keys) == len(set(keys.tolist()))
    with zipfile.ZipFile(tmp_path / "export.zip", "w") as zf:
        zf.write(FIXTURE, "diabetic_data.csv")
    assert patient_keys("diabetes130", tmp_path / "export.zip").tolist() == keys.tolist()


def test_two_sites_that_share_patients_share_keys(tmp_path: Path) -> None:
    lines = fixture_lines()
    half = len(lines) // 2
    a = write_csv(tmp_path / "a" / "diabetic_data.csv", lines[: half + 5])
    b = write_csv(tmp_path / "b" / "diabetic_data.csv", [lines[0], *lines[half:]])
    shared = set(patient_keys("diabetes130", a).tolist()) & set(
        patient_keys("diabetes130", b).tolist()
    )
    assert shared == _patients(lines[: half + 5]) & _patients([lines[0], *lines[half:]]) != set()


def test_a_mimic_folder_gives_its_subject_ids(tmp_path: Path) -> None:
    write_synthetic_mimic3(tmp_path, n_patients=6, seed=1)
    keys = patient_keys("mimic3", tmp_path)
    assert len(keys) == 6 and all(k.isdigit() for k in keys.tolist())
