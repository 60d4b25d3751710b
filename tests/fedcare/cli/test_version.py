"""``fedcare --version`` prints the package version and exits 0."""

from __future__ import annotations

import subprocess
import sys

import pytest

from fedcare.cli.main import main
from fedcare_core import __version__


def test_version_flag_prints_the_version_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == f"fedcare {__version__}\n"


def test_version_flag_of_the_console_entry_point() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "fedcare.cli", "--version"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"fedcare {__version__}"
