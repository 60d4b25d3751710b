"""``flower-supernode`` with shorter waits: Flower's SuperNode, its idle and reply polls capped.

Flower 1.42's SuperNode loop (``flwr.supernode.start_client_internal``) sleeps a hard-coded
3 s whenever a pull from the SuperLink finds no message, and 0.5 s at a time while it waits for
the ClientApp's reply. A FedCARE round is one message per client, so every round pays most of
that idle wait: with sub-second local work the waits, not the arithmetic, set the pace.

``python -m fedcare_flower.supernode --poll-s 0.5 -- <flower-supernode arguments>`` runs
Flower's own ``flower-supernode`` entry point unchanged except that every ``time.sleep`` of that
one module is capped at ``--poll-s``: the same protocol and processes, polling more often. Each
idle pull is one small request to the SuperLink, so ``K / poll_s`` requests per second reach it
while nodes idle (20/s for K = 10 at 0.5 s): fine on loopback or a LAN; across sites, run the
stock ``flower-supernode`` (:attr:`fedcare_flower.flower_options.FlowerConfig.node_poll_s` = None).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from types import ModuleType
from typing import Any


class CappedSleep:
    """A stand-in for the ``time`` module whose ``sleep`` waits at most ``cap_s`` seconds."""

    def __init__(self, cap_s: float, module: ModuleType = time) -> None:
        if not cap_s > 0:
            raise ValueError(f"cap_s must be > 0, got {cap_s}")
        self.cap_s = cap_s
        self._time = module

    def sleep(self, seconds: float) -> None:
        """Sleep ``min(seconds, cap_s)``."""
        self._time.sleep(min(seconds, self.cap_s))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._time, name)


def cap_supernode_waits(cap_s: float) -> None:
    """Cap the sleeps of Flower's SuperNode loop at ``cap_s`` seconds (this process only)."""
    import flwr.supernode.start_client_internal as loop

    loop.time = CappedSleep(cap_s)  # type: ignore[assignment]


def main(argv: Sequence[str] | None = None) -> None:
    """Parse ``--poll-s``, then run ``flower-supernode`` with the remaining arguments."""
    parser = argparse.ArgumentParser(
        prog="python -m fedcare_flower.supernode",
        description="flower-supernode with its idle/reply polls capped at --poll-s seconds; "
        "the arguments after -- go to flower-supernode.",
    )
    parser.add_argument("--poll-s", type=float, required=True)
    parser.add_argument("supernode_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    rest = list(args.supernode_args)
    if rest[:1] == ["--"]:
        rest = rest[1:]
    cap_supernode_waits(args.poll_s)

    from flwr.supernode.cli.flower_supernode import flower_supernode

    sys.argv = ["flower-supernode", *rest]
    flower_supernode()


if __name__ == "__main__":  # pragma: no cover
    main()
