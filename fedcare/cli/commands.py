"""The ``fedcare`` command tree: each command's help line and the function adding its parser.

Building the parser imports a command's module (and what it imports: numpy, torch, Great
Expectations, MLflow …) only for the command being run, so ``fedcare --help``, ``fedcare
--version`` and an unknown command answer at once; :func:`build_parser` with no argument builds
every command's options (for tests and tools that inspect them).
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fedcare_core import __version__
from fedcare_core.data.registry import dataset_names, get_dataset
from fedcare_core.plugins import entry_names

#: Where Stage 1 runs: the installed backends, by their entry points' names (nothing imported,
#: not even the configuration, so ``fedcare --help`` stays instant).
BACKENDS = entry_names("backend")


def _add_run_parser(sub: Any) -> None:
    from fedcare.cli import run_options

    run_options.add_parser(sub, BACKENDS)


def _add_data_parser(sub: Any) -> None:
    """``fedcare data``'s commands: fetch, split-sites, check, schema."""
    from fedcare.cli import data_check, split_sites

    data = sub.add_parser("data", help=COMMANDS["data"][0])
    data_sub = data.add_subparsers(dest="data_command", required=True)
    fetch = data_sub.add_parser("fetch", help="download a public dataset into the cache")
    fetch.add_argument("name", choices=[n for n in dataset_names() if get_dataset(n).fetchable])
    fetch.add_argument(
        "--cache-dir", type=Path, help="default: $FEDCARE_CACHE_DIR or ~/.cache/fedcare"
    )
    fetch.add_argument("--url", help="download from this URL instead of the official one")
    fetch.add_argument("--quiet", action="store_true")
    split_sites.add_parser(data_sub)
    data_check.add_parsers(data_sub)


def _module_parser(module: str) -> Callable[[Any], None]:
    """A command whose module's ``add_parser(sub)`` adds it; the module is imported then."""

    def add(sub: Any) -> None:
        importlib.import_module(module).add_parser(sub)

    return add


#: Each command of ``fedcare``, in ``fedcare --help``'s order: its one-line help and what adds
#: its parser. A command's module (and what it imports: numpy, torch, Great Expectations …) is
#: imported only to build that command's parser, so ``--help`` and ``--version`` stay fast.
COMMANDS: dict[str, tuple[str, Callable[[Any], None]]] = {
    "run": ("run an experiment end to end", _add_run_parser),
    "data": ("dataset utilities", _add_data_parser),
    "stack": (
        "the local Prefect server, worker, deployments and MLflow server",
        _module_parser("fedcare.cli.stack_command"),
    ),
    "experiment": (
        "run the paper's experiments (tables, figures, MLflow)",
        _module_parser("fedcare.cli.experiment"),
    ),
    "predict": (
        "score raw rows (no labels needed) with a client's model",
        _module_parser("fedcare.cli.predict"),
    ),
    "federation": (
        "the coordinator's side of a federation",
        _module_parser("fedcare.cli.federation_command"),
    ),
    "site": ("a hospital's side of a federation", _module_parser("fedcare.cli.site_command")),
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``fedcare`` parser.

    Parameters
    ----------
    only
        ``None``: every command's options. A command's name: that command's options only, every
        other command by its name and help (what ``fedcare --help`` lists, and enough to refuse
        an unknown command); ``""``: no command's options.
    """
    parser = argparse.ArgumentParser(
        prog="fedcare",
        description="FedCARE: multi-objective personalised federated learning for clinical data.",
    )
    parser.add_argument("--version", action="version", version=f"fedcare {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (help_line, add_parser) in COMMANDS.items():
        if only is None or name == only:
            add_parser(sub)
        else:
            sub.add_parser(name, help=help_line)
    return parser


def command_of(argv: Sequence[str]) -> str:
    """The command ``argv`` names: its first word not starting with ``-`` (``""``: none).

    ``fedcare``'s own options (``-h``, ``--version``) take no value, so the first such word is
    the command (or an unknown word argparse refuses).
    """
    return next((arg for arg in argv if not arg.startswith("-")), "")
