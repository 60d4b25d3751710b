"""The README as a tested contract: every command block, in order, on a fresh clone.

The journey is README.md's ``bash`` blocks, then those of every ``docs/*.md`` page the README
links to, in the order of their first link (:func:`tests.e2e.readme_journeys.journey_pages`).

The slow test clones this repository, gives the clone the installed environment (``.venv``)
and the datasets at ``../shared/datasets`` as the README expects them, pre-fills the download
cache (no internet here), sets ``FEDCARE_QUICK=1`` (the README's documented way to try every
command at a small size), and runs every block of the journey as one shell session
(:mod:`tests.e2e.readme_journeys`). It then stops whatever the session left running and checks
that ``git status`` of the clone is clean: nothing tracked changed and nothing new that git
does not ignore (patient files, keys, results, schemas and Stage 1 documents all land where git
ignores them).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
import zipfile
from pathlib import Path

import pytest

from fedcare.procs.marked import terminate_marked
from tests.conftest import REPO_ROOT
from tests.e2e.readme_journeys import journey_blocks, journey_pages, readme_blocks, session_script

#: Marker env var of every process the journey starts (swept at the end).
MARKER = "FEDCARE_README_TEST"
#: What a fresh user has not set; the journey sets what it needs itself.
UNSET = (
    "FEDCARE_DATA_DIR", "MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI", "PREFECT_API_URL",
    "PREFECT_HOME", "VIRTUAL_ENV", "FEDCARE_RETRAIN_DATA_DIR",
)  # fmt: skip


def test_every_bash_block_is_in_the_journey_with_known_directives():
    pages = journey_pages(REPO_ROOT)
    assert [p.name for p in pages[:2]] == ["README.md", "RUNNING.md"]
    blocks = journey_blocks(REPO_ROOT)
    assert len(blocks) == sum(p.read_text().count("```bash") for p in pages)
    assert len(readme_blocks((REPO_ROOT / "README.md").read_text())) < len(blocks)
    script = session_script(blocks, "/tmp/log")
    for block in blocks:
        assert block.text in script or block.loopback  # as written, or with loopback hosts
        for host, _ in block.loopback:
            assert host in block.text  # a directive that no longer matches the block fails
        for prefix in [*block.background, *(p for p, _ in block.skip)]:
            assert prefix in block.text


@pytest.mark.slow
@pytest.mark.journey
@pytest.mark.realdata
@pytest.mark.timeout(3600)
def test_the_readme_journeys_run_as_written_on_a_fresh_clone(data_dir, tmp_path):
    clone = _fresh_clone(tmp_path)
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "datasets").symlink_to(data_dir.resolve())
    cache = _download_cache(tmp_path, data_dir)
    token = uuid.uuid4().hex
    env = {k: v for k, v in os.environ.items() if k not in UNSET}
    env |= {
        "FEDCARE_QUICK": "1",
        "FEDCARE_CACHE_DIR": str(cache),
        "PYTHONPATH": str(clone),  # the clone's code, over the shared editable install
        "PATH": os.pathsep.join(
            p for p in env["PATH"].split(os.pathsep) if not p.startswith(str(REPO_ROOT))
        ),
        MARKER: token,
    }
    log = tmp_path / "journey.log"
    script = tmp_path / "journey.sh"
    blocks = journey_blocks(clone)
    script.write_text(session_script(blocks, str(tmp_path / "background.log")))
    try:
        with log.open("w") as out:
            done = subprocess.run(
                ["bash", str(script)], cwd=clone, env=env, stdout=out, stderr=subprocess.STDOUT,
                timeout=3600, check=False,
            )  # fmt: skip
        assert done.returncode == 0, _tail(log)
    finally:
        _stop_everything(clone, env, token)
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=clone, capture_output=True, text=True, check=True,
    ).stdout.splitlines()  # fmt: skip
    assert status == []  # nothing tracked changed, nothing new that git does not ignore


def _fresh_clone(tmp_path: Path) -> Path:
    clone = tmp_path / "checkout"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(REPO_ROOT), str(clone)], check=True)
    (clone / ".venv").symlink_to(REPO_ROOT / ".venv")
    # `make` reinstalls when pyproject.toml or the constraints are newer than the install
    # stamp; the clone's files are as old as the installed ones (never re-point the install).
    stamp = (REPO_ROOT / ".venv" / ".installed").stat().st_mtime
    for name in ("pyproject.toml", "constraints/py311-linux.txt"):
        os.utime(clone / name, (stamp - 60, stamp - 60))
    return clone


def _download_cache(tmp_path: Path, data_dir: Path) -> Path:
    """What `fedcare data fetch diabetes130` leaves in its cache (verified again by it)."""
    cache = tmp_path / "cache"
    (cache / "diabetes130").mkdir(parents=True)
    with zipfile.ZipFile(data_dir / "diabetes130" / "dataset_diabetes.zip") as zf:
        name = next(n for n in zf.namelist() if n.endswith("diabetic_data.csv"))
        (cache / "diabetes130" / "diabetic_data.csv").write_bytes(zf.read(name))
    return cache


def _stop_everything(clone: Path, env: dict[str, str], token: str) -> None:
    fedcare = str(REPO_ROOT / ".venv" / "bin" / "fedcare")
    for argv in (["federation", "stop", "--state-dir", "STATE"], ["stack", "down"]):
        subprocess.run([fedcare, *argv], cwd=clone, env=env, capture_output=True, check=False)
    terminate_marked(MARKER, token, 10.0)


def _tail(log: Path) -> str:
    lines = log.read_text(errors="replace").splitlines()
    blocks = [line for line in lines if line.startswith("::: README block")]
    return f"failed in {blocks[-1] if blocks else 'set-up'}:\n" + "\n".join(lines[-80:])


def test_directives_and_wrappers_behave(tmp_path):
    # The wrappers run a background command in the background and skip a skipped one.
    readme = (
        "<!-- readme-test: background=sleep 30; skip=false now (never) -->\n"
        "```bash\nsleep 30\nfalse now\necho done > out.txt\n```\n"
    )
    script = session_script(readme_blocks(readme), str(tmp_path / "bg.log"))
    done = subprocess.run(
        ["bash", "-c", script + "kill $!\n"], cwd=tmp_path, capture_output=True, text=True,
        timeout=20, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out.txt").read_text() == "done\n"
    assert "not run: false now: never" in done.stderr
    assert shutil.which("bash")
