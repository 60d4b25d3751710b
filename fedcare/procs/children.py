"""Child processes of a run: free loopback ports, process groups, and a guaranteed teardown.

Every process a run starts gets its own session (so one signal reaches it and the helpers it
spawns in its group) and an environment marker, ``FEDCARE_RUN_TOKEN``, that all its descendants
inherit, including those Flower starts in sessions of their own (SuperExec, ``flwr-serverapp``,
``flwr-clientapp``) and Ray's workers. :meth:`ProcessSupervisor.sweep` finds stragglers by that
marker in ``/proc`` (Linux), so "no process of this run survives it" is checked, not assumed.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO

from fedcare.procs.marked import terminate_marked
from fedcare.procs.watchdog import start_watchdog, stop_watchdog

TOKEN_ENV = "FEDCARE_RUN_TOKEN"
PR_SET_PDEATHSIG = 1
#: The started processes' umask: the files they create are owner-only (0600, folders 0700).
CHILD_UMASK = 0o077
_CHILD_FILE_MODE = 0o600


def executable(name: str) -> str:
    """A console script of this environment (next to the running interpreter), else ``name``."""
    candidate = Path(sys.executable).parent / name
    return str(candidate) if candidate.exists() else name


def _pdeathsig() -> Callable[[], None] | None:
    """A preexec function asking the kernel to SIGTERM the child if this process dies."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM)

    return preexec


def die_with_parent(parent_pid: int, sig: int = signal.SIGKILL) -> None:
    """Have the kernel send ``sig`` to this process when its parent dies (Linux; else no-op).

    For a process forked, not started through :class:`ProcessSupervisor` (a forked child does
    not inherit its parent's death signal). If the parent ``parent_pid`` is already gone, the
    signal is sent at once.
    """
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, sig)
    if os.getppid() != parent_pid:  # died before the prctl took effect
        os.kill(os.getpid(), sig)


class ProcessSupervisor:
    """Starts named processes in their own sessions and guarantees they are gone at the end.

    Parameters
    ----------
    logs_dir
        Each process's stdout and stderr go to ``<logs_dir>/<name>.log``.
    env
        Environment of every process (the run token is added).
    grace_s
        Time between SIGTERM and SIGKILL at teardown.
    """

    def __init__(self, logs_dir: Path, env: Mapping[str, str], grace_s: float) -> None:
        self.token = uuid.uuid4().hex
        self.logs_dir = logs_dir
        self.env = {**env, TOKEN_ENV: self.token}
        self.grace_s = grace_s
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self._logs: dict[str, IO[bytes]] = {}
        self._preexec = _pdeathsig()
        # PR_SET_PDEATHSIG fires when the forking *thread* exits, so start from one thread.
        self._thread = threading.get_ident()
        # Started with the first process: if this one dies by SIGKILL, it ends every marked
        # process (Flower's own children only poll for their parent, and may miss it).
        self._watchdog: subprocess.Popen[bytes] | None = None

    def start(self, name: str, argv: Sequence[str]) -> subprocess.Popen[bytes]:
        """Start ``argv`` as process ``name``."""
        if name in self.procs:
            raise ValueError(f"process {name!r} already started")
        if self._watchdog is None:
            self._watchdog = start_watchdog(TOKEN_ENV, self.token, self.grace_s)
        path = self.logs_dir / f"{name}.log"
        # Owner-only from creation (0600), like every file of the run folder.
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW
        log = os.fdopen(os.open(path, flags, _CHILD_FILE_MODE), "ab")  # closed in stop_all
        self._logs[name] = log
        preexec = self._preexec if threading.get_ident() == self._thread else None
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self.env,
            start_new_session=True,
            preexec_fn=preexec,  # only calls prctl: safe after fork
            umask=CHILD_UMASK,  # what Flower's processes write (state, results) is owner-only
        )
        self.procs[name] = proc
        return proc

    def alive(self, name: str) -> bool:
        """Whether process ``name`` is still running."""
        return self.procs[name].poll() is None

    def log_tail(self, name: str, lines: int = 15) -> str:
        """The last lines of ``name``'s log."""
        path = self.logs_dir / f"{name}.log"
        if not path.exists():
            return ""
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self, names: Sequence[str]) -> None:
        """SIGTERM the process groups of ``names``; SIGKILL what is left after the grace time."""
        targets = [self.procs[n] for n in names if n in self.procs]
        for proc in targets:
            _signal_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + self.grace_s
        for proc in targets:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(deadline - time.monotonic(), 0.01))
        for proc in targets:
            _signal_group(proc, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=self.grace_s)

    def sweep(self) -> list[int]:
        """Terminate every process still carrying this run's token; return what was found."""
        return terminate_marked(TOKEN_ENV, self.token, self.grace_s)

    def stop_all(self, order: Sequence[str] = ()) -> None:
        """Stop processes in ``order`` first, then the rest, then sweep; close the logs."""
        first = [n for n in order if n in self.procs]
        self.stop(first)
        self.stop([n for n in self.procs if n not in first])
        self.sweep()
        if self._watchdog is not None:
            stop_watchdog(self._watchdog, self.grace_s)
            self._watchdog = None
        for log in self._logs.values():
            log.close()


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


@contextlib.contextmanager
def signals_blocked() -> Iterator[None]:
    """Defer SIGINT/SIGTERM/SIGHUP while tearing down (delivered afterwards)."""
    sigs = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
