"""Placeholder (replaced by the site-cli branch)."""

from typing import Any


def add_init_parser(sub: Any) -> None:  # noqa: D103
    pass


def cmd_federation_init(args: Any) -> int:  # noqa: D103
    return 2
