"""The command tree: ``--help`` and ``--version`` load no heavy library; each command still parses.

Importing numpy, torch, MLflow, Prefect, Flower or Great Expectations takes seconds, so the
parser imports a command's module only to build the command being run. Each check runs in a
fresh interpreter and reads ``sys.modules``: what was imported, not how long it took.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from fedcare.cli.commands import COMMANDS, build_parser, command_of
from fedcare_core import __version__

#: Libraries no help screen, no version and no parser of a light command may import.
HEAVY = (
    "numpy",
    "pandas",
    "torch",
    "scipy",
    "mlflow",
    "prefect",
    "flwr",
    "great_expectations",
    "dask",
    "sklearn",
)


def imported_after(argv: list[str]) -> tuple[int, str, list[str]]:
    """``fedcare argv`` in a fresh interpreter: its exit status, stdout and the heavy imports."""
    code = (
        "import json, sys\n"
        "from fedcare.cli.main import main\n"
        "try:\n"
        f"    status = main({argv!r})\n"
        "except SystemExit as exc:\n"
        "    status = exc.code\n"
        f"heavy = sorted(m for m in {HEAVY!r} if m in sys.modules)\n"
        "print(json.dumps([status, heavy]), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    status, heavy = json.loads(done.stderr.strip().splitlines()[-1])
    return status, done.stdout, heavy


def test_version_prints_the_version_and_imports_nothing_heavy() -> None:
    status, out, heavy = imported_after(["--version"])
    assert (status, out, heavy) == (0, f"fedcare {__version__}\n", [])


def test_help_lists_every_command_and_imports_nothing_heavy() -> None:
    status, out, heavy = imported_after(["--help"])
    assert status == 0 and heavy == []
    for name, (help_line, _) in COMMANDS.items():
        assert name in out and help_line.split()[0] in out


@pytest.mark.parametrize(
    ("argv", "allowed"),
    [
        (["site", "--help"], set()),
        (["site", "prepare", "--help"], set()),
        (["stack", "--help"], set()),
        # The choices of these come from the configuration module, which needs numpy.
        (["federation", "--help"], {"numpy"}),
        (["federation", "init", "--help"], {"numpy"}),
        (["data", "split-sites", "--help"], {"numpy"}),
        (["predict", "--help"], {"numpy"}),
        (["run", "--help"], {"numpy"}),
    ],
)
def test_a_commands_help_imports_nothing_heavy(argv: list[str], allowed: set[str]) -> None:
    status, out, heavy = imported_after(argv)
    assert status == 0 and f"usage: fedcare {' '.join(argv[:-1])}" in out
    assert set(heavy) <= allowed


def test_an_unknown_command_is_a_usage_error_without_heavy_imports() -> None:
    status, _, heavy = imported_after(["nope"])
    assert status == 2 and heavy == []


def test_the_light_parser_lists_the_commands_as_the_full_one_does() -> None:
    # The help lines of COMMANDS are the ones each command's module gives its parser.
    assert build_parser("").format_help() == build_parser().format_help()
    full = build_parser()
    for name in COMMANDS:
        args = full.parse_args([name, *_required(name)])
        assert args.command == name


def _required(name: str) -> list[str]:
    """The fewest words after ``name`` that parse (sub-command groups need a sub-command)."""
    return {
        "data": ["fetch", "diabetes130"],
        "stack": ["status"],
        "experiment": ["comparison"],
        "predict": ["--model", "m", "--data", "d.csv", "--out", "o.csv"],
        "federation": ["status", "--state-dir", "s"],
        "site": ["rotate-key", "--site", "s"],
    }.get(name, [])


def test_a_command_parsed_alone_parses_as_in_the_full_parser() -> None:
    argv = ["run", "--dataset", "diabetes130", "--rounds", "3", "--backend", "local"]
    assert build_parser(command_of(argv)).parse_args(argv) == build_parser().parse_args(argv)


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        ([], ""),
        (["--help"], ""),
        (["--version"], ""),
        (["run", "--rounds", "3"], "run"),
        (["-h", "site", "prepare"], "site"),
        (["nope"], "nope"),
    ],
)
def test_the_command_is_the_first_word_not_an_option(argv: list[str], command: str) -> None:
    assert command_of(argv) == command
