"""``fedcare data split-sites``: a synthetic file end to end, and the real file once."""

from __future__ import annotations

import csv
import json
import stat
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from fedcare.cli.main import main
from fedcare_core.data.diabetes130 import DIABETES130_CSV_NAME, load_diabetes130

N_REAL = 101_766
N_REAL_PATIENTS = 71_518
#: Distinctive patient numbers, so a test can tell that none is printed.
PATIENTS = [f"8{p:07d}" for p in range(9)]


def _write_cohort(folder: Path, header: str = "encounter_id,patient_nbr,readmitted") -> Path:
    rows = [f"{100 + i},{PATIENTS[i % 9]},NO\r\n" for i in range(20)]
    path = folder / DIABETES130_CSV_NAME
    folder.mkdir(parents=True, exist_ok=True)
    path.write_bytes((header + "\r\n" + "".join(rows)).encode())
    return path


def _split(data: Path, out: Path, *extra: str, sites: int = 3) -> int:
    argv = ["data", "split-sites", "--dataset", "diabetes130", "--data", str(data)]
    return main([*argv, "--sites", str(sites), "--seed", "4", "--out", str(out), *extra])


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _site_patients(path: Path) -> list[str]:
    with path.open(newline="") as fh:
        return [row["patient_nbr"] for row in csv.DictReader(fh)]


def test_split_sites_writes_owner_only_sites_and_a_manifest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _write_cohort(tmp_path / "in")
    out = tmp_path / "out"
    assert _split(data.parent, out, "--objectives-per-site", "2") == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[-1] == str(out / "sites.json")
    assert lines[:3] == [
        f"site-{i}: 3 patients, {n} encounters -> {out / f'site-{i}.csv'}"
        for i, n in enumerate(len(_site_patients(out / f"site-{i}.csv")) for i in range(3))
    ]
    assert not any(p in captured.out + captured.err for p in PATIENTS)
    assert _mode(out) == 0o700
    assert sorted(p.name for p in out.iterdir()) == [
        "site-0.csv",
        "site-1.csv",
        "site-2.csv",
        "sites.json",
    ]
    assert {_mode(p) for p in out.iterdir()} == {0o600}
    manifest = json.loads((out / "sites.json").read_text())
    assert [(m["name"], m["data"]) for m in manifest] == [
        (f"site-{i}", f"site-{i}.csv") for i in range(3)
    ]
    assert all(len(set(m["objectives"])) == 2 for m in manifest)
    per_site = [_site_patients(out / m["data"]) for m in manifest]
    assert sorted(p for site in per_site for p in site) == sorted(
        PATIENTS[i % 9] for i in range(20)
    )
    assert [len(set(a) & set(b)) for a in per_site for b in per_site if a is not b] == [0] * 6
    source = data.read_bytes().splitlines(keepends=True)
    for m in manifest:
        site = (out / m["data"]).read_bytes().splitlines(keepends=True)
        assert site[0] == source[0] and set(site[1:]) <= set(source[1:])


def test_a_zip_is_read_without_extracting_and_the_split_is_seeded(tmp_path: Path) -> None:
    data = _write_cohort(tmp_path / "in")
    archive = tmp_path / "cohort.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.write(data, f"dataset_diabetes/{DIABETES130_CSV_NAME}")
    assert _split(archive, tmp_path / "a") == 0
    assert _split(data, tmp_path / "b") == 0
    for i in range(3):
        assert (tmp_path / "a" / f"site-{i}.csv").read_bytes() == (
            tmp_path / "b" / f"site-{i}.csv"
        ).read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b", "cohort.zip", "in"]


def test_a_non_empty_out_is_refused_before_reading_and_left_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    # The data path does not exist: the --out refusal comes first, before any data is read.
    assert _split(tmp_path / "missing", out) == 2
    err = capsys.readouterr().err
    assert err.startswith("fedcare: error: --out ") and "not empty" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert [p.name for p in out.iterdir()] == ["keep.txt"] and (
        out / "keep.txt"
    ).read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_file_without_patient_nbr_is_refused_and_nothing_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _write_cohort(tmp_path / "in", header="encounter_id,patient,readmitted")
    out = tmp_path / "out"
    assert _split(data, out) == 2
    err = capsys.readouterr().err
    assert err == (
        f"fedcare: error: file {data}; column 'patient_nbr': the header has no patient_nbr "
        "column; split-sites needs one to keep each patient's encounters at one site\n"
    )
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["in"]


@pytest.mark.parametrize(
    ("extra", "sites", "message"),
    [
        (["--objectives-per-site", "4"], 3, "--objectives-per-site must be between 1 and 3"),
        ([], 1, "--sites must lie in [2, 1000], got 1"),
        ([], 10**9, "--sites must lie in [2, 1000], got 1,000,000,000"),  # before any draw
        ([], 10, "9 patient(s) cannot be split over 10 sites"),
        (["--seed", "-1"], 3, "--seed must lie in [0, 4,294,967,295], got -1"),
    ],
)
def test_bad_options_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], sites: int, message: str
) -> None:
    data = _write_cohort(tmp_path / "in")
    assert _split(data, tmp_path / "out", *extra, sites=sites) == 2
    err = capsys.readouterr().err
    assert err.startswith("fedcare: error: ") and message in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_mimic3_is_refused_by_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["data", "split-sites", "--dataset", "mimic3", "--data", str(tmp_path)]
    assert main([*argv, "--sites", "2", "--seed", "0", "--out", str(tmp_path / "o")]) == 2
    assert "split-sites supports diabetes130" in capsys.readouterr().err


@pytest.mark.realdata
def test_the_real_file_splits_into_three_loadable_sites(data_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "sites"
    assert _split(data_dir, out) == 0
    manifest = json.loads((out / "sites.json").read_text())
    assert [m["name"] for m in manifest] == ["site-0", "site-1", "site-2"]
    patients: list[set[int]] = []
    rows = 0
    for m in manifest:
        path = out / m["data"]
        ids = pd.read_csv(path, usecols=["patient_nbr"])["patient_nbr"]
        patients.append(set(ids.tolist()))
        cohort = load_diabetes130(path, verify_checksum=False)
        assert cohort.n_rows == len(ids)
        rows += cohort.n_rows
    assert rows == N_REAL
    assert sum(len(p) for p in patients) == len(set().union(*patients)) == N_REAL_PATIENTS
    assert max(len(p) for p in patients) - min(len(p) for p in patients) <= 1
