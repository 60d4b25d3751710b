"""Patient data and keys written inside a git checkout are kept out of git, with a warning.

Following the README from the project folder writes patient-level files (a hospital's split,
a site folder's encoded rows, scores keyed by patient) and private keys (the coordinator's TLS
key, a node's key) where ``git status`` would list them, one ``git add .`` away from a commit.
:func:`keep_out_of_git` is called by every command that writes such a file or folder: outside a
git work tree it does nothing; inside one it tells git to ignore the output (a ``.gitignore``
holding ``*`` inside a folder, as ``python -m venv`` does; the file's path in the repository's
own, uncommitted ``info/exclude`` for a single file) and prints one line saying so.
"""

from __future__ import annotations

import sys
from pathlib import Path

#: What a folder's own ``.gitignore`` holds: everything in it, itself included.
_FOLDER_RULES = "# Written by FedCARE: patient data or keys; never commit them.\n*\n"


def _work_tree_of(path: Path) -> Path | None:
    """The git work tree holding ``path`` (the nearest ancestor with ``.git``), or ``None``."""
    for folder in [path, *path.parents]:
        if (folder / ".git").exists():
            return folder
    return None


def keep_out_of_git(path: str | Path, what: str, *, folder: bool) -> bool:
    """Make git ignore ``path`` if it lies in a git work tree; warn once on stderr.

    Parameters
    ----------
    path
        The output: an existing folder (``folder=True``) or a file about to be written.
    what
        What it holds, for the warning (e.g. ``"the site folder"``).
    folder
        Whether ``path`` is a folder (then ``path/.gitignore`` is written).

    Returns
    -------
    bool
        Whether the output lies in a git work tree (and is now ignored by it).
    """
    target = Path(path).expanduser().absolute()
    tree = _work_tree_of(target.parent)
    if tree is None:
        return False
    if folder:
        ignore = target / ".gitignore"
        if not ignore.exists():
            ignore.write_text(_FOLDER_RULES)
        how = f"{ignore.name} inside it"
    else:
        exclude = _exclude_file(tree)
        if exclude is None:
            return True
        rule = "/" + target.relative_to(tree).as_posix()
        present = exclude.read_text().splitlines() if exclude.exists() else []
        if rule not in present:
            exclude.parent.mkdir(parents=True, exist_ok=True)
            with exclude.open("a") as out:
                out.write(("" if not present or present[-1] == "" else "\n") + rule + "\n")
        how = f"listed in {exclude}"
    print(
        f"fedcare: note: {what} {path} is inside the git checkout {tree}; git ignores it "
        f"({how}). Keep patient data and keys outside checkouts.",
        file=sys.stderr,
    )
    return True


def _exclude_file(tree: Path) -> Path | None:
    """The repository's ``info/exclude`` (``.git`` may be a folder or a ``gitdir:`` file)."""
    dot_git = tree / ".git"
    if dot_git.is_dir():
        return dot_git / "info" / "exclude"
    try:
        line = dot_git.read_text().strip()
    except OSError:
        return None
    if not line.startswith("gitdir:"):
        return None
    gitdir = Path(line.removeprefix("gitdir:").strip())
    gitdir = gitdir if gitdir.is_absolute() else tree / gitdir
    # A linked work tree's own folder has a `commondir` naming the shared repository.
    common = gitdir / "commondir"
    if common.exists():
        gitdir = (gitdir / common.read_text().strip()).resolve()
    return gitdir / "info" / "exclude"
