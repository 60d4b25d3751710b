"""Outputs never replace inputs: every spelling of one file, folders that hold inputs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fedcare_core.errors import ConfigError
from fedcare_core.files.apart import check_outputs_apart, lies_within, same_place


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder holding ``rows.csv``, a symbolic link and a hard link to it."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rows.csv").write_text("a,b\n1,2\n")
    (tmp_path / "link.csv").symlink_to(tmp_path / "rows.csv")
    os.link(tmp_path / "rows.csv", tmp_path / "hard.csv")
    (tmp_path / "sub").mkdir()
    (tmp_path / "linked-folder").symlink_to(tmp_path / "sub")
    return tmp_path


@pytest.mark.parametrize(
    ("out", "how"),
    [
        ("rows.csv", "is --data rows.csv:"),
        ("./rows.csv", "is --data rows.csv:"),
        ("sub/../rows.csv", "is --data rows.csv:"),
        ("ABSOLUTE", "is --data rows.csv:"),
        ("link.csv", "(the same file by another path or a symbolic link)"),
        ("linked-folder/../rows.csv", "is --data rows.csv"),
        ("hard.csv", "(a hard link to the same file)"),
    ],
)
def test_an_output_that_is_the_input_is_refused_however_spelt(
    folder: Path, out: str, how: str
) -> None:
    out = str(folder / "rows.csv") if out == "ABSOLUTE" else out
    with pytest.raises(ConfigError) as info:
        check_outputs_apart({"--out": out}, {"--data": "rows.csv"})
    message = str(info.value)
    assert message.startswith(f"--out {Path(out)} ") and how in message
    assert "write --out elsewhere" in message and "\n" not in message
    assert (folder / "rows.csv").read_text() == "a,b\n1,2\n"


def test_an_output_beside_the_input_or_not_given_is_accepted(folder: Path) -> None:
    check_outputs_apart({"--out": "scores.csv"}, {"--data": "rows.csv"})
    check_outputs_apart({"--out": "sub/rows.csv"}, {"--data": "rows.csv"})  # same name, elsewhere
    check_outputs_apart({"--out": None, "--json": ""}, {"--data": "rows.csv", "--map": None})
    check_outputs_apart({"--out": "new/deeper/x.csv"}, {"--data": "new/deeper/y.csv"})


def test_an_output_not_yet_made_is_compared_by_its_resolved_path(folder: Path) -> None:
    with pytest.raises(ConfigError, match=r"--out linked-folder/x\.csv is --data sub/x\.csv"):
        check_outputs_apart({"--out": "linked-folder/x.csv"}, {"--data": "sub/x.csv"})


def test_a_new_folder_may_hold_no_input_nor_other_output(folder: Path) -> None:
    with pytest.raises(ConfigError, match=r"--out \. holds --data rows\.csv"):
        check_outputs_apart({"--out": "."}, {"--data": "rows.csv"}, new_folders=("--out",))
    with pytest.raises(ConfigError, match=r"--run-dir sub holds --out sub/r\.json"):
        check_outputs_apart(
            {"--out": "sub/r.json", "--run-dir": "sub"}, {}, new_folders=("--run-dir",)
        )
    with pytest.raises(ConfigError, match=r"--out linked-folder holds --map sub/m\.yaml"):
        check_outputs_apart(
            {"--out": "linked-folder"}, {"--map": "sub/m.yaml"}, new_folders=("--out",)
        )
    # A new folder inside an input's folder, or beside it: fine.
    check_outputs_apart({"--out": "sub/site"}, {"--data": "rows.csv"}, new_folders=("--out",))


def test_an_existing_file_of_a_folder_read_whole_is_refused(folder: Path) -> None:
    (folder / "sub" / "ADMISSIONS.csv").write_text("x\n")
    with pytest.raises(ConfigError) as info:
        check_outputs_apart(
            {"--out": "sub/ADMISSIONS.csv"}, {"--data-dir": "sub"}, read_folders=("--data-dir",)
        )
    assert str(info.value) == (
        "--out sub/ADMISSIONS.csv is a file of --data-dir sub, which this command reads: the "
        "output would replace it; write --out elsewhere"
    )
    # A new file there, or an existing one in a folder not read whole: fine.
    check_outputs_apart(
        {"--out": "sub/results.json"}, {"--data-dir": "sub"}, read_folders=("--data-dir",)
    )
    check_outputs_apart({"--out": "sub/ADMISSIONS.csv"}, {"--data-dir": "sub"})


def test_same_place_and_lies_within(folder: Path) -> None:
    assert same_place(Path("rows.csv"), folder / "hard.csv")
    assert not same_place(Path("rows.csv"), Path("sub"))
    assert same_place(Path("missing.csv"), folder / "sub" / ".." / "missing.csv")
    assert lies_within(Path("linked-folder/a/b.csv"), folder / "sub")
    assert lies_within(folder / "sub", Path("sub"))
    assert not lies_within(Path("rows.csv"), Path("sub"))


def test_a_folder_read_in_part_refuses_only_outputs_under_what_it_reads(tmp_path: Path) -> None:
    site = tmp_path / "north"
    (site / "data").mkdir(parents=True)
    (site / "site.json").write_text("{}")
    (site / "data" / "train.npz").write_bytes(b"x")
    result = site / "result.json"
    result.write_text("{}")  # an earlier run's result: written again, it replaces nothing read
    reads = {"--site": ("site.json", "data")}
    check_outputs_apart({"--out": result}, {"--site": site}, read_folders=reads)
    for read in (site / "site.json", site / "data" / "train.npz"):
        with pytest.raises(ConfigError, match="is a file of --site"):
            check_outputs_apart({"--out": read}, {"--site": site}, read_folders=reads)
    with pytest.raises(ConfigError, match="is a file of --site"):  # read whole: refused
        check_outputs_apart({"--out": result}, {"--site": site}, read_folders=("--site",))
