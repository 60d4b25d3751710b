"""Detached service processes: start with a pid file and a log, stop by group, sweep by marker."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import httpx

from fedcare.procs.marked import alive, group_members, reap

#: Seconds a service gets to stop after SIGTERM before SIGKILL.
_STOP_GRACE_S = 15.0
_POLL_S = 0.25


def read_pid(pid_file: Path) -> int | None:
    """The pid in ``pid_file``, or ``None`` if there is none."""
    try:
        return int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return None


def start_detached(
    argv: Sequence[str], *, env: Mapping[str, str], log: Path, pid_file: Path, cwd: Path
) -> int:
    """Start ``argv`` in a new session, output to ``log``, pid written to ``pid_file``.

    Parameters
    ----------
    argv
        The command.
    env
        Its full environment.
    log
        Log file (appended to).
    pid_file
        Written with the process id.
    cwd
        Working directory.

    Returns
    -------
    int
        The process id (also its process-group and session id).
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    pid_file.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=dict(env),
            cwd=cwd,
            start_new_session=True,
        )
    pid_file.write_text(f"{proc.pid}\n")
    return proc.pid


def stop_group(pid: int, grace_s: float = _STOP_GRACE_S) -> bool:
    """SIGTERM the process group led by ``pid``; SIGKILL it after ``grace_s``.

    Returns
    -------
    bool
        True if it had to be killed.
    """
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return sig == signal.SIGKILL
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            reap(pid)
            if not alive(pid) and not group_members(pid):
                return sig == signal.SIGKILL
            time.sleep(_POLL_S)
    return True


def wait_http(url: str, timeout_s: float, *, pid: int | None = None) -> bool:
    """Poll ``url`` until it answers 200, ``timeout_s`` passes, or process ``pid`` dies."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if pid is not None:
            reap(pid)
            if not alive(pid):
                return False
        try:
            if httpx.get(url, timeout=2.0).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    return False


def log_tail(log: Path, lines: int = 20) -> str:
    """The last ``lines`` lines of a log, for error messages."""
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
