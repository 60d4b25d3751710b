"""Signals end a run as one exception: :class:`Interrupted`, carrying the signal.

SIGINT, SIGTERM and SIGHUP all mean "stop now, cleanly": inside :func:`signals_raise` each one
raises :class:`Interrupted` in the main thread, so every ``finally`` of the run (a Flower
federation's teardown, a process pool's shutdown, a Dask cluster's close) runs, and the command
line turns it into one message and the shell's exit status, 128 + the signal's number (130 for
SIGINT, 143 for SIGTERM). :class:`Interrupted` is a ``KeyboardInterrupt``, so code that already
stops on Ctrl-C stops on SIGTERM the same way, and ``except Exception`` never swallows it.

The first signal is also remembered (:func:`received`): code that is about to write a result
(an experiment cell's document) calls :func:`check` first, so nothing is written once a signal
has arrived, even in a thread the exception does not reach. Worker processes that compute for
a parent (a process pool's, a local Dask cluster's) call :func:`child_ignores_interrupts`: the
terminal's Ctrl-C reaches the whole process group, and the parent, not each worker with its own
traceback, decides how the run ends.

This module imports nothing of the project.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType

#: The signals that end a run cleanly.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

_first: list[int] = []
_depth = [0]


class Interrupted(KeyboardInterrupt):
    """A run ended by a signal.

    Parameters
    ----------
    signum
        The signal's number (``signal.SIGTERM``, ...).
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = int(signum)

    @property
    def name(self) -> str:
        """The signal's name, e.g. ``"SIGTERM"``."""
        return signal.Signals(self.signum).name

    @property
    def exit_status(self) -> int:
        """The shell's status of a process ended by this signal: 128 + its number."""
        return 128 + self.signum


def as_interrupted(exc: KeyboardInterrupt) -> Interrupted:
    """``exc`` as an :class:`Interrupted` (a plain ``KeyboardInterrupt`` is SIGINT's)."""
    return exc if isinstance(exc, Interrupted) else Interrupted(signal.SIGINT)


def received() -> int | None:
    """The first stop signal this process received inside :func:`signals_raise` (None: none)."""
    return _first[0] if _first else None


def check() -> None:
    """Raise :class:`Interrupted` if a stop signal has arrived; call it before writing results.

    Raises
    ------
    Interrupted
        Carrying the first signal received.
    """
    signum = received()
    if signum is not None:
        raise Interrupted(signum)


def checked_progress(
    progress: Callable[[str, int, int], None] | None,
) -> Callable[[str, int, int], None]:
    """``progress`` preceded, in the main thread, by :func:`check`.

    A signal's exception is raised wherever the main thread happens to be, and code there may
    swallow it (a library's bare ``except``, or C code that clears any error of its call back
    into Python): the run would go on, and every later signal is ignored as a teardown's.
    Every round and every client's phase reports progress, so with this a signal whose
    exception was lost still ends the run at the next report.

    Parameters
    ----------
    progress
        ``progress(phase, done, total)``, or None.

    Returns
    -------
    Callable
        The checking reporter (it calls ``progress`` too, where one was given).
    """

    def report(phase: str, done: int, total: int) -> None:
        if threading.current_thread() is threading.main_thread():
            check()
        if progress is not None:
            progress(phase, done, total)

    return report


def _interrupted_by(signum: int) -> Interrupted:
    """Record ``signum`` as received (if it is the first) and return its :class:`Interrupted`.

    For a library's own handler that ran instead of ours (Ray's raises ``SystemExit``): the
    caller raises what this returns, and :func:`check` then stops any later write.
    """
    if not _first:
        _first.append(int(signum))
    return Interrupted(signum)


def _raise(signum: int, _frame: FrameType | None) -> None:
    # Only the first signal raises: a second one (Ctrl-C pressed again) must not cut short the
    # teardown the first one started; teardowns are bounded by their own timeouts.
    if _first:
        return
    raise _interrupted_by(signum)


@contextlib.contextmanager
def signals_raise() -> Iterator[None]:
    """Turn SIGINT, SIGTERM and SIGHUP into :class:`Interrupted` in the main thread.

    SIGINT raises whatever handler an earlier library left installed (one that only sets a flag
    would let a run's processes outlive it), unless the caller chose to ignore SIGINT. Only the
    first signal raises; later ones are ignored while the run tears down. Blocks nest; the
    previous handlers are restored on leaving each, and the remembered signal is forgotten on
    leaving the outermost. Outside the main thread (where Python cannot install handlers) this
    does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}
    for sig in STOP_SIGNALS:
        if sig == signal.SIGINT and signal.getsignal(sig) is signal.SIG_IGN:
            continue
        previous[sig] = signal.signal(sig, _raise)
    _depth[0] += 1
    try:
        yield
    finally:
        _depth[0] -= 1
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
        if _depth[0] == 0:
            _first.clear()


def exit_now(status: int) -> None:
    """Flush stdout and stderr and end the process at once with ``status`` (never returns).

    For a program whose run was interrupted and torn down: the interpreter's normal exit joins
    every non-daemon thread, and a library's thread still waiting on a backend that the teardown
    stopped (Flower's workers blocked in ``ray.get``) would hold the process forever. Nothing
    else runs, so nothing is written after the program's last message.
    """
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(status)


def child_ignores_interrupts() -> None:
    """In a worker process: ignore SIGINT and take SIGTERM's default (die at once, silently).

    A process pool's initializer or a Dask worker's setup: the parent receives the terminal's
    Ctrl-C too and stops the workers itself.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
