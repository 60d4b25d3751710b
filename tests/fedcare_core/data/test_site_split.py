"""Splitting a cohort file's text by patient into sites, and writing the site folder."""

from __future__ import annotations

import csv
import io
import json
import os
import stat
from collections import Counter
from pathlib import Path

import pytest

from fedcare_core.data import site_split
from fedcare_core.data.site_split import (
    MANIFEST_FILE,
    Site,
    check_out_dir,
    decode_csv,
    draw_site_objectives,
    split_sites,
    write_sites,
)
from fedcare_core.errors import ConfigError, DataError

OBJECTIVES = ("early_discharge", "readmission", "los")
HEADER = "encounter_id,patient_nbr,note\r\n"
#: Rows with quoting the split must keep byte for byte: a comma, a doubled quote, a line break.
TRICKY = [
    '2,101,"a, b"\r\n',
    '3,102,"say ""hi"""\r\n',
    '4,101,"two\r\nlines"\r\n',
    "5,103, spaced \r\n",
]


def _text(n_patients: int = 12, per_patient: int = 3) -> str:
    """A CSV with ``n_patients`` patients of ``per_patient`` encounters, interleaved."""
    rows = [
        f"{1000 + e * n_patients + p},{500 + p},n{e}\r\n"
        for e in range(per_patient)
        for p in range(n_patients)
    ]
    return HEADER + "".join(rows)


def _records(text: str) -> list[tuple[list[str], str]]:
    """Each record's fields and exact text (a reference parse, independent of the module)."""
    lines = list(io.StringIO(text, newline=""))
    reader = csv.reader(lines)
    out, start = [], 0
    for fields in reader:
        out.append((fields, "".join(lines[start : reader.line_num])))
        start = reader.line_num
    return out


def _patient_sets(sites: tuple[Site, ...]) -> list[set[str]]:
    return [{fields[1] for fields, _ in _records(s.text)[1:]} for s in sites]


def test_whole_patients_disjoint_sites_and_every_row_once() -> None:
    text = _text()
    sites = split_sites(text, 3, seed=0)
    assert [s.name for s in sites] == ["site-0", "site-1", "site-2"]
    patients = _patient_sets(sites)
    for a in range(3):
        for b in range(a + 1, 3):
            assert not patients[a] & patients[b]
    assert set().union(*patients) == {str(500 + p) for p in range(12)}
    source_rows = Counter(r for _, r in _records(text)[1:])
    site_rows = Counter(r for s in sites for _, r in _records(s.text)[1:])
    assert site_rows == source_rows
    for s, p in zip(sites, patients, strict=True):
        assert s.patients == len(p)
        assert s.encounters == len(_records(s.text)) - 1 == 3 * len(p)


def test_header_first_source_order_and_line_ending_kept() -> None:
    text = _text()
    source_order = [r for _, r in _records(text)[1:]]
    for s in split_sites(text, 4, seed=3):
        assert s.text.startswith(HEADER)
        rows = [r for _, r in _records(s.text)[1:]]
        positions = [source_order.index(r) for r in rows]
        assert positions == sorted(positions)
        assert s.text.count("\r\n") == s.encounters + 1 and "\n" not in s.text.replace("\r\n", "")


def test_quoted_fields_are_written_exactly_as_in_the_source() -> None:
    text = HEADER + "1,100,plain\r\n" + "".join(TRICKY) + "6,104,x\r\n"
    sites = split_sites(text, 2, seed=1)
    joined = "".join(s.text for s in sites)
    for row in TRICKY:
        assert joined.count(row) == 1
    # Patient 101's two encounters (one of them spans two lines) are at the same site.
    (home,) = [s for s in sites if '"a, b"' in s.text]
    assert '"two\r\nlines"' in home.text
    assert sum(s.encounters for s in sites) == 6


def test_a_last_row_without_line_ending_gets_the_files() -> None:
    text = "id,patient_nbr\n1,7\n2,8\n3,7"
    sites = split_sites(text, 2, seed=0)
    for s in sites:
        assert s.text.startswith("id,patient_nbr\n") and s.text.endswith("\n")
    (home,) = [s for s in sites if "1,7\n" in s.text]
    assert home.text == "id,patient_nbr\n1,7\n3,7\n"


def test_a_byte_order_mark_heads_every_site_file() -> None:
    sites = split_sites("\ufeff" + _text(4, 1), 2, seed=0)
    assert all(s.text.startswith("\ufeff" + HEADER) for s in sites)
    assert sum(s.encounters for s in sites) == 4


def test_the_same_seed_gives_the_same_split_and_another_seed_another() -> None:
    text = _text(40, 2)
    assert split_sites(text, 3, seed=7) == split_sites(text, 3, seed=7)
    first = _patient_sets(split_sites(text, 3, seed=7))
    assert _patient_sets(split_sites(text, 3, seed=8)) != first


@pytest.mark.parametrize(("n_patients", "n_sites"), [(10, 3), (12, 5), (7, 7), (101, 2)])
def test_site_sizes_in_patients_differ_by_at_most_one(n_patients: int, n_sites: int) -> None:
    sites = split_sites(_text(n_patients, 2), n_sites, seed=0)
    counts = [s.patients for s in sites]
    assert sum(counts) == n_patients and max(counts) - min(counts) <= 1


def test_decode_refuses_an_empty_file_and_non_utf8() -> None:
    with pytest.raises(DataError, match="empty") as e:
        decode_csv(b"  \r\n", "x.csv")
    assert e.value.file == "x.csv"
    with pytest.raises(DataError, match="not UTF-8"):
        decode_csv(b"id,patient_nbr\n1,\xff\n", "x.csv")
    assert decode_csv(HEADER.encode(), "x.csv") == HEADER


@pytest.mark.parametrize(
    ("text", "match", "column", "rows"),
    [
        ("id,patient\r\n1,2\r\n2,3\r\n", "no patient_nbr column", "patient_nbr", None),
        ("patient_nbr,patient_nbr\r\n1,2\r\n", "more than one", "patient_nbr", None),
        ("id,patient_nbr\r\n1,2\r\n2,2\r\n", "1 patient", "patient_nbr", None),
        ("id,patient_nbr\r\n", "no data rows", None, None),
        ("\r\n\r\n", "empty", None, None),
        ('id,patient_nbr\r\n1,2\r\n2,"3\r\n', "malformed CSV", None, None),
        ("id,patient_nbr\r\n1,2\r\n2,3,4\r\n3,4\r\n5\r\n", "ragged", None, (2, 4)),
        ("id,patient_nbr\r\n1,2\r\n2,?\r\n3,\r\n4,5\r\n", "no patient", "patient_nbr", (2, 3)),
    ],
)
def test_bad_files_are_refused_naming_the_file(
    text: str, match: str, column: str | None, rows: tuple[int, ...] | None
) -> None:
    with pytest.raises(DataError, match=match) as e:
        split_sites(text, 2, seed=0, name="in.csv")
    assert (e.value.file, e.value.column, e.value.rows) == ("in.csv", column, rows)


@pytest.mark.parametrize("sites", [1, 0, -3, True])
def test_fewer_than_two_sites_are_refused(sites: int) -> None:
    with pytest.raises(ConfigError, match="--sites"):
        split_sites(_text(), sites, seed=0)


def test_site_objectives_are_drawn_as_clients_and_checked() -> None:
    draws = draw_site_objectives("diabetes130", OBJECTIVES, 4, 2, seed=5)
    assert len(draws) == 4
    assert all(len(d) == len(set(d)) == 2 and set(d) <= set(OBJECTIVES) for d in draws)
    assert {o for d in draws for o in d} == set(OBJECTIVES)  # covered, as a run's clients are
    assert draws == draw_site_objectives("diabetes130", OBJECTIVES, 4, 2, seed=5)
    for bad in (0, 4):
        with pytest.raises(ConfigError, match="--objectives-per-site must be between 1 and 3"):
            draw_site_objectives("diabetes130", OBJECTIVES, 4, bad, seed=5)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_write_sites_owner_only_with_a_manifest(tmp_path: Path) -> None:
    sites = split_sites(_text(), 3, seed=0)
    objectives = draw_site_objectives("diabetes130", OBJECTIVES, 3, 1, seed=0)
    out = tmp_path / "new" / "sites"
    manifest = write_sites(sites, objectives, out)
    assert manifest == out / MANIFEST_FILE
    assert _mode(out) == 0o700
    assert sorted(p.name for p in out.iterdir()) == [
        "site-0.csv",
        "site-1.csv",
        "site-2.csv",
        MANIFEST_FILE,
    ]
    assert all(_mode(p) == 0o600 for p in out.iterdir())
    assert json.loads(manifest.read_text()) == [
        {"name": f"site-{i}", "data": f"site-{i}.csv", "objectives": list(objectives[i])}
        for i in range(3)
    ]
    for s in sites:
        assert (out / s.file_name).read_bytes() == s.text.encode()
    assert sorted(p.name for p in out.parent.iterdir()) == ["sites"]  # no temporary left


def test_an_empty_out_folder_is_replaced_a_full_one_or_a_file_refused(tmp_path: Path) -> None:
    sites = split_sites(_text(), 2, seed=0)
    objectives = draw_site_objectives("diabetes130", OBJECTIVES, 2, 1, seed=0)
    empty = tmp_path / "empty"
    empty.mkdir(mode=0o755)
    write_sites(sites, objectives, empty)
    assert _mode(empty) == 0o700 and len(list(empty.iterdir())) == 3
    with pytest.raises(ConfigError, match="not empty"):
        check_out_dir(empty)
    (tmp_path / "file").write_text("keep")
    with pytest.raises(ConfigError, match="is a file"):
        write_sites(sites, objectives, tmp_path / "file")
    assert (tmp_path / "file").read_text() == "keep"


def test_a_failed_write_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sites = split_sites(_text(), 3, seed=0)
    objectives = draw_site_objectives("diabetes130", OBJECTIVES, 3, 1, seed=0)
    calls: list[Path] = []
    real_write = site_split._write_new

    def fail_second(path: Path, data: bytes) -> None:
        calls.append(path)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real_write(path, data)

    monkeypatch.setattr(site_split, "_write_new", fail_second)
    with pytest.raises(DataError, match="No space left") as e:
        write_sites(sites, objectives, tmp_path / "out")
    assert e.value.file == str(tmp_path / "out")
    assert len(calls) == 2 and list(tmp_path.iterdir()) == []


def test_a_folder_appearing_meanwhile_is_not_overwritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sites = split_sites(_text(), 2, seed=0)
    objectives = draw_site_objectives("diabetes130", OBJECTIVES, 2, 1, seed=0)
    out = tmp_path / "out"
    real_check = site_split.check_out_dir

    def check_then_race(path: str | Path) -> Path:
        target = real_check(path)
        out.mkdir()
        (out / "theirs.txt").write_text("theirs")
        return target

    monkeypatch.setattr(site_split, "check_out_dir", check_then_race)
    with pytest.raises(ConfigError, match="cannot be created"):
        write_sites(sites, objectives, out)
    assert os.listdir(out) == ["theirs.txt"] and os.listdir(tmp_path) == ["out"]
