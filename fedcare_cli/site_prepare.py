"""Placeholder (replaced by the site-cli branch)."""

from typing import Any


def add_prepare_parser(sub: Any) -> None:  # noqa: D103
    pass


def add_personalise_parser(sub: Any) -> None:  # noqa: D103
    pass


def cmd_site_prepare(args: Any) -> int:  # noqa: D103
    return 2


def cmd_site_personalise(args: Any) -> int:  # noqa: D103
    return 2
