"""``fedcare run --sites SITES.json --schema federation.json``: the options it takes.

The sites are prepared by :func:`fedcare.app.sites_in_process.prepare_sites` and run by the run
service; this module refuses, before any file is read, the options the schema decides.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from fedcare.cli.options import bounded
from fedcare_core.config import flagged_settings
from fedcare_core.errors import ConfigError
from fedcare_core.sites.schema import RUN_SETTINGS

if TYPE_CHECKING:
    from fedcare.app.run import PreparedRun

#: What a run over sites in one process may choose besides the schema's run settings: the
#: method (a baseline or bound compared with FedCARE on the same sites).
_IN_PROCESS = ("algorithm",)
#: ``fedcare run`` options the schema decides (given with --sites they would be ignored):
#: every setting but :data:`~fedcare_core.sites.schema.RUN_SETTINGS` and the algorithm.
_SCHEMA_DECIDES = (
    "config", "data_dir", "no_verify", "preset", "set_values", "run_dir", "resume",
    *(name for name in flagged_settings() if name not in (*RUN_SETTINGS, *_IN_PROCESS)),
)  # fmt: skip


def _refused_options(args: argparse.Namespace) -> list[str]:
    """The options given with ``--sites`` that the schema decides, as ``--flag`` names."""
    out = []
    for dest in _SCHEMA_DECIDES:
        value = getattr(args, dest, None)
        if value is not None and value is not False:
            out.append("--set" if dest == "set_values" else "--" + dest.replace("_", "-"))
    return out


def prepare_sites_run(args: argparse.Namespace, *, quiet: bool) -> PreparedRun:
    """Check the options, then prepare every site (``sites_in_process.prepare_sites``).

    Raises
    ------
    ConfigError
        For ``--sites`` without ``--schema`` (or the reverse), an option the schema decides, a
        bad schema or sites list.
    DataError, DataCheckError
        For a site's file that fails its checks (the file, column and rows).
    """
    from fedcare.app.sites_in_process import prepare_sites

    if args.sites is None or args.schema is None:
        raise ConfigError("--sites and --schema go together: give both")
    refused = _refused_options(args)
    if refused:
        raise ConfigError(
            f"with --sites the federation schema ({args.schema}) decides "
            f"{', '.join(refused)}: only --algorithm, --seed, --rounds, --backend, --secagg and "
            "the output options may be added"
        )
    for name in RUN_SETTINGS:
        value, limits = getattr(args, name), flagged_settings()[name].spec.range
        if value is not None and limits is not None:
            bounded(f"--{name}", value, limits)

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    return prepare_sites(
        args.schema,
        args.sites,
        seed=args.seed,
        rounds=args.rounds,
        secagg=bool(getattr(args, "secagg", False)),
        algorithm=args.algorithm,
        say=None if quiet else say,
    )
