"""A run given no data, as a newcomer types it: one line naming every way to give the data.

Neither ``--data-dir`` nor ``FEDCARE_DATA_DIR``, and an empty (or half-filled) download cache:
``fedcare run`` and ``fedcare data check`` exit 2 before any work with one line naming
``--data-dir``, ``FEDCARE_DATA_DIR`` and ``fedcare data fetch``; a variable naming nothing is
named; and ``fedcare data fetch`` says where a run finds what it downloaded.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fedcare.cli.main import _fetched_note, main

#: What the privacy block of the README types (issue 52, stumble 4).
PRIVACY_RUN = "run --clients 10 --rounds 20 --dp-epsilon 3 --dp-delta 1e-5".split()


@pytest.fixture
def fresh_shell(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No FEDCARE_DATA_DIR, an empty download cache, and a new working folder; the cache."""
    monkeypatch.delenv("FEDCARE_DATA_DIR", raising=False)
    cache = tmp_path / "cache"
    monkeypatch.setenv("FEDCARE_CACHE_DIR", str(cache))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return cache


def one_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.startswith("fedcare: error: ") and err.count("\n") == 1, err
    return err


def assert_names_every_way(err: str, cache: Path) -> None:
    for way in ("--data-dir DIR", "FEDCARE_DATA_DIR=DIR", "'fedcare data fetch diabetes130'"):
        assert way in err, err
    assert str(cache / "diabetes130") in err


@pytest.mark.parametrize("half_filled", [False, True])
def test_a_run_without_data_names_the_three_ways_before_any_work(
    fresh_shell: Path, capsys: pytest.CaptureFixture[str], half_filled: bool
) -> None:
    if half_filled:  # a download stopped half-way leaves the folder without the verified file
        (fresh_shell / "diabetes130").mkdir(parents=True)
        (fresh_shell / "diabetes130" / "diabetes130.zip.part").write_bytes(b"PK\x03\x04")
    assert main(PRIVACY_RUN) == 2
    assert_names_every_way(one_error(capsys), fresh_shell)  # not even "Loading …" first
    assert os.listdir(".") == []  # nothing created (no results/)


def test_data_check_without_data_names_the_three_ways(
    fresh_shell: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["data", "check", "--dataset", "diabetes130"]) == 2
    assert_names_every_way(one_error(capsys), fresh_shell)


def test_credentialed_data_names_the_option_and_the_variable(
    fresh_shell: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--dataset", "mimic3", "--rounds", "2"]) == 2
    err = one_error(capsys)
    assert "--data-dir DIR" in err and "FEDCARE_DATA_DIR=DIR" in err and "fetch" not in err


def test_a_variable_naming_nothing_is_named(
    fresh_shell: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FEDCARE_DATA_DIR", "../shared/datasets")  # the Makefile's, elsewhere
    assert main(PRIVACY_RUN) == 2
    err = one_error(capsys)
    assert "FEDCARE_DATA_DIR=../shared/datasets: no such file or folder" in err
    assert os.listdir(".") == []


def test_a_grid_names_the_variable_naming_nothing_before_any_cell(
    fresh_shell: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FEDCARE_DATA_DIR", "no-such-folder")
    argv = ["experiment", "comparison", "--seeds", "1", "--rounds", "2", "--out", "grid"]
    assert main(argv) == 2
    assert "FEDCARE_DATA_DIR=no-such-folder: no such file or folder" in one_error(capsys)
    assert os.listdir(".") == []


def test_a_definition_without_its_file_beside_it_says_how_to_name_the_folder(
    fresh_shell: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    definition = Path(__file__).resolve().parents[3] / "examples" / "hospital" / "definition.yaml"
    copy = Path("definition.yaml")
    copy.write_text(definition.read_text())
    assert main(["run", "--dataset", str(copy), "--rounds", "2"]) == 2
    err = one_error(capsys)
    assert "no encounters.csv.gz" in err and "--data-dir DIR" in err
    assert "FEDCARE_DATA_DIR=DIR" in err
    assert os.listdir(".") == ["definition.yaml"]


def test_fetch_says_where_a_run_finds_the_download(fresh_shell: Path, tmp_path: Path) -> None:
    csv = fresh_shell / "diabetes130" / "diabetic_data.csv"
    assert "neither --data-dir nor FEDCARE_DATA_DIR" in _fetched_note(None, csv)
    assert "neither --data-dir" in _fetched_note(fresh_shell, csv)  # the default, named
    other = tmp_path / "elsewhere" / "diabetes130" / "diabetic_data.csv"
    note = _fetched_note(tmp_path / "elsewhere", other)
    assert f"--data-dir {other.parent}" in note and "not the default cache" in note
