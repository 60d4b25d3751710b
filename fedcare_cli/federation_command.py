"""``fedcare federation``: the coordinator's side of a federation (init, start, register, run)."""

from __future__ import annotations

import argparse
from typing import Any

from fedcare_cli import federation_init


def add_parser(sub: Any) -> None:
    """``fedcare federation``'s sub-commands."""
    federation = sub.add_parser("federation", help="the coordinator's side of a federation")
    fed_sub = federation.add_subparsers(dest="federation_command", required=True)
    federation_init.add_init_parser(fed_sub)


def cmd_federation(args: argparse.Namespace) -> int:
    """Run ``fedcare federation <command>``."""
    if args.federation_command == "init":
        return federation_init.cmd_federation_init(args)
    raise AssertionError(args.federation_command)  # pragma: no cover
