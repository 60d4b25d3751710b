"""Processes found by a marker in their environment (``NAME=token``), and ended together.

Everything the project starts carries a marker its descendants inherit, so "nothing it started
outlives it" is checked in ``/proc`` (Linux), not assumed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

#: Seconds between checks while waiting for marked processes to exit.
_POLL_S = 0.05


def alive(pid: int | None) -> bool:
    """Whether ``pid`` is a live process (neither gone nor a zombie)."""
    if pid is None:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def marked_processes(env_name: str, token: str) -> list[int]:
    """PIDs of live processes whose environment holds ``env_name=token``.

    Reads ``/proc``; other users' processes are not readable and are skipped, and so is this
    process.
    """
    needle = f"{env_name}={token}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
        except OSError:
            continue
        if alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def reap(pid: int) -> None:
    """Collect ``pid``'s exit status if it is our child (so it does not stay a zombie)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


#: SIGKILL sweeps after SIGTERM, each over the processes then alive.
_KILL_SWEEPS = 3


def terminate_marked(
    env_name: str, token: str, grace_s: float, *, wait_first: bool = False
) -> list[int]:
    """End every live process carrying ``env_name=token``: SIGTERM, then SIGKILL sweeps.

    Parameters
    ----------
    env_name, token
        The marker.
    grace_s
        Seconds each signal gets before the next step.
    wait_first
        Give the processes ``grace_s`` to exit on their own first (e.g. Ray's workers after
        ``ray.shutdown()``).

    Returns
    -------
    list[int]
        The PIDs found at the start.
    """
    found = marked_processes(env_name, token)

    def gone_within(limit: float) -> bool:
        deadline = time.monotonic() + limit
        while marked_processes(env_name, token):
            for pid in found:
                reap(pid)
            if time.monotonic() >= deadline:
                return False
            time.sleep(_POLL_S)
        return True

    if not found or (wait_first and gone_within(grace_s)):
        return found
    # SIGKILL again for a process a dying parent started after the previous sweep (Ray's raylet
    # spawns its dashboard and runtime-env agents late; one once outlived a single sweep).
    for sig in (signal.SIGTERM, *[signal.SIGKILL] * _KILL_SWEEPS):
        for pid in marked_processes(env_name, token):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        if gone_within(grace_s):
            break
    return found


def group_members(pgid: int) -> list[int]:
    """Live processes in process group ``pgid``."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
            out.append(int(entry.name))
    return out
