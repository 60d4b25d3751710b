"""The processes a faulted run leaves: found by the marker every test run's processes inherit."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from fedcare.procs.marked import marked_processes

#: Environment variable marking every process a test's ``fedcare`` run starts.
MARK_ENV = "FEDCARE_TEST_MARK"
#: How long a run's processes get to go after the run ends or is killed.
FOLLOW_S = 15


def command_line(pid: int) -> str | None:
    """The process's command line, or None when it is gone."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return None


def processes_left(mark: str, within_s: float = FOLLOW_S, exclude: int | None = None) -> list[str]:
    """The command lines of ``mark``'s processes still alive after ``within_s``; kill them.

    ``exclude``: a process of the run not to count (e.g. the ``fedcare`` process itself).
    """

    def alive() -> list[int]:
        return [p for p in marked_processes(MARK_ENV, mark) if p != exclude]

    deadline = time.monotonic() + within_s
    while alive() and time.monotonic() < deadline:
        time.sleep(0.2)
    left = alive()
    cmds = [cmd for cmd in map(command_line, left) if cmd is not None]
    for pid in left:  # do not leave them to later tests
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return cmds
