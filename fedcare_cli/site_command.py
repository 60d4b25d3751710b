"""``fedcare site``: what a hospital's data team runs (prepare, join, personalise)."""

from __future__ import annotations

import argparse
from typing import Any

from fedcare_cli import site_prepare


def add_parser(sub: Any) -> None:
    """``fedcare site``'s sub-commands."""
    site = sub.add_parser("site", help="a hospital's side of a federation")
    site_sub = site.add_subparsers(dest="site_command", required=True)
    site_prepare.add_prepare_parser(site_sub)
    site_prepare.add_personalise_parser(site_sub)


def cmd_site(args: argparse.Namespace) -> int:
    """Run ``fedcare site <command>``."""
    if args.site_command == "prepare":
        return site_prepare.cmd_site_prepare(args)
    if args.site_command == "personalise":
        return site_prepare.cmd_site_personalise(args)
    raise AssertionError(args.site_command)  # pragma: no cover - argparse rejects the rest
