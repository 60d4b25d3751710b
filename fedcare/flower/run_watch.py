"""Waiting for a Flower Stage 1 run: progress from the round log, and every way it can fail.

:func:`watch_run` is what the loopback deployment and ``fedcare federation run`` both wait
with: it reports each finished round, returns once the ServerApp wrote its result (or its
error), and raises :class:`~fedcare.flower.workspace.FlowerRunError` when the SuperLink dies,
``flwr run`` ends without a result, no round finishes within the stall limits, or the run
exceeds its time limit.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedcare.flower.results import read_error, read_rounds, result_ready
from fedcare.flower.workspace import FlowerRunError
from fedcare.procs.children import ProcessSupervisor
from fedcare_core.nn.training import ProgressFn

#: How often the run's processes and round log are checked.
WATCH_INTERVAL_S = 0.2
#: After ``flwr run --stream`` exits, how long the result file may take to appear.
_RESULT_GRACE_S = 10.0


@dataclass(frozen=True)
class RunWatch:
    """What :func:`watch_run` watches.

    Parameters
    ----------
    result_dir
        The ServerApp's result folder.
    supervisor
        Holds the ``flwr-run`` process.
    superlink_alive, superlink_log
        Whether the SuperLink still runs, and the tail of its log.
    stall_limits
        Seconds without a finished round before the run counts as stuck: before the first
        round, and between later rounds.
    run_timeout_s
        A limit on the whole run (None: none).
    logs_dir
        Named in the stall message.
    """

    result_dir: Path
    supervisor: ProcessSupervisor
    superlink_alive: Callable[[], bool]
    superlink_log: Callable[[], str]
    stall_limits: tuple[float, float]
    run_timeout_s: float | None
    logs_dir: Path


def watch_run(
    watch: RunWatch,
    total: int,
    progress: ProgressFn | None,
    on_line: Callable[[dict[str, Any]], None] | None = None,
) -> None:
    """Wait until the run's result (or error) is written, reporting each round.

    Each finished round goes to ``progress`` and its line of the round log (λ*, ‖d‖², losses,
    participants, ε) to ``on_line``.
    """
    sup = watch.supervisor
    reported = 0
    started = last_progress = time.monotonic()
    first_limit, later_limit = watch.stall_limits
    run_exited_at: float | None = None
    while True:
        for line in read_rounds(watch.result_dir)[reported:]:
            reported += 1
            last_progress = time.monotonic()
            if progress is not None:
                progress("stage1", int(line["round"]), total)
            if on_line is not None:
                on_line(line)
        if result_ready(watch.result_dir) or read_error(watch.result_dir) is not None:
            return
        if not watch.superlink_alive():
            raise FlowerRunError(
                "flower-superlink exited during the run:\n" + watch.superlink_log()
            )
        if not sup.alive("flwr-run"):
            run_exited_at = run_exited_at or time.monotonic()
            if time.monotonic() - run_exited_at > _RESULT_GRACE_S:
                raise FlowerRunError(
                    "the Flower run ended without a result; `flwr run` said:\n"
                    + sup.log_tail("flwr-run")
                    + "\nSuperLink log:\n"
                    + watch.superlink_log()
                )
        now = time.monotonic()
        stall = first_limit if reported == 0 else later_limit
        if now - last_progress > stall:
            raise FlowerRunError(
                f"no Stage 1 round finished for {stall:g} s; logs in {watch.logs_dir}. "
                "SuperLink log:\n" + watch.superlink_log()
            )
        if watch.run_timeout_s is not None and now - started > watch.run_timeout_s:
            raise FlowerRunError(f"Stage 1 did not finish within {watch.run_timeout_s:g} s")
        time.sleep(WATCH_INTERVAL_S)
