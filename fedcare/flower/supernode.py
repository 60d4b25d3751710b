"""``flower-supernode`` with shorter waits: Flower's SuperNode, its idle and reply polls capped.

Flower 1.42's SuperNode loop sleeps a hard-coded 3 s whenever a pull from the SuperLink finds no
message, and 0.5 s at a time while it waits for the ClientApp's reply. A FedCARE round is one
message per client, so every round pays most of that idle wait: with sub-second local work the
waits, not the arithmetic, set the pace.

``python -m fedcare.flower.supernode --poll-s 0.5 -- <flower-supernode arguments>`` runs
Flower's own ``flower-supernode`` console script unchanged except that every sleep of its loop
is capped at ``--poll-s`` (:func:`fedcare.flower.flwr_internals.cap_supernode_sleeps`): the same
protocol and processes, polling more often. On a flwr version the seam was not verified on, the
cap is left off with one warning and the stock SuperNode runs. Each idle pull is one small
request to the SuperLink, so ``K / poll_s`` requests per second reach it while nodes idle (20/s
for K = 10 at 0.5 s): fine on loopback or a LAN; across sites, run the stock
``flower-supernode`` (:attr:`fedcare.flower.flower_options.FlowerConfig.node_poll_s` = None).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import sys
from collections.abc import Callable, Sequence

from fedcare.flower.flwr_internals import cap_supernode_sleeps

#: Flower's documented SuperNode command (a console script of the flwr distribution).
_SUPERNODE_SCRIPT = "flower-supernode"


def console_script(name: str) -> Callable[[], object]:
    """The function behind the installed console script ``name``.

    Raises
    ------
    LookupError
        If no installed distribution declares it.
    """
    for entry in importlib.metadata.entry_points(group="console_scripts", name=name):
        loaded: Callable[[], object] = entry.load()
        return loaded
    raise LookupError(f"no console script {name!r} is installed")


def main(argv: Sequence[str] | None = None) -> None:
    """Parse ``--poll-s``, then run ``flower-supernode`` with the remaining arguments."""
    parser = argparse.ArgumentParser(
        prog="python -m fedcare.flower.supernode",
        description="flower-supernode with its idle/reply polls capped at --poll-s seconds; "
        "the arguments after -- go to flower-supernode.",
    )
    parser.add_argument("--poll-s", type=float, required=True)
    parser.add_argument("supernode_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if not args.poll_s > 0:
        parser.error(f"--poll-s must be > 0, got {args.poll_s}")
    rest = list(args.supernode_args)
    if rest[:1] == ["--"]:
        rest = rest[1:]
    cap_supernode_sleeps(args.poll_s)  # False (and one warning): Flower's own waits
    run = console_script(_SUPERNODE_SCRIPT)
    sys.argv = [_SUPERNODE_SCRIPT, *rest]
    run()


if __name__ == "__main__":  # pragma: no cover
    main()
