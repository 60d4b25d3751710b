"""Patient files and keys written inside a git checkout are ignored by git, with a warning."""

from __future__ import annotations

import subprocess
from pathlib import Path

from fedcare_core.files.private import keep_out_of_git


def _git(tree: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=tree, capture_output=True, text=True, check=True)
    return done.stdout


def _repo(tmp_path: Path) -> Path:
    tree = tmp_path / "checkout"
    tree.mkdir()
    _git(tree, "init", "-q")
    return tree


def test_a_folder_inside_a_checkout_gets_its_own_ignore_rules(tmp_path, capsys):
    tree = _repo(tmp_path)
    site = tree / "SITE_DIR"
    (site / "data").mkdir(parents=True)
    (site / "data" / "rows.npz").write_bytes(b"x")
    assert keep_out_of_git(site, "the site folder", folder=True)
    assert _git(tree, "status", "--porcelain", "--untracked-files=all") == ""
    err = capsys.readouterr().err
    assert "the site folder" in err and str(tree) in err and "git ignores it" in err
    assert keep_out_of_git(site, "the site folder", folder=True)  # idempotent
    assert (site / ".gitignore").read_text().count("*") == 1


def test_a_file_inside_a_checkout_is_listed_in_the_repositorys_exclude(tmp_path):
    tree = _repo(tmp_path)
    (tree / "keep.csv").write_text("a\n")
    scores = tree / "out" / "scores.csv"
    for _ in range(2):
        assert keep_out_of_git(scores, "the scores", folder=False)
    scores.parent.mkdir()
    scores.write_text("patient_nbr,p\n1,0.5\n")
    status = _git(tree, "status", "--porcelain", "--untracked-files=all")
    assert status == "?? keep.csv\n"  # the user's own file is still seen
    exclude = (tree / ".git" / "info" / "exclude").read_text().splitlines()
    assert exclude.count("/out/scores.csv") == 1


def test_a_linked_work_tree_uses_its_repositorys_exclude(tmp_path):
    tree = _repo(tmp_path)
    (tree / "f").write_text("x")
    _git(tree, "add", "f")
    _git(tree, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")
    linked = tmp_path / "linked"
    _git(tree, "worktree", "add", "-q", str(linked))
    assert keep_out_of_git(linked / "scores.csv", "the scores", folder=False)
    (linked / "scores.csv").write_text("1\n")
    assert _git(linked, "status", "--porcelain") == ""


def test_outside_a_checkout_nothing_is_written_or_said(tmp_path, capsys):
    folder = tmp_path / "SITE_DIR"
    folder.mkdir()
    assert not keep_out_of_git(folder, "the site folder", folder=True)
    assert not keep_out_of_git(tmp_path / "scores.csv", "the scores", folder=False)
    assert list(folder.iterdir()) == [] and capsys.readouterr().err == ""
