"""Signals become one exception carrying the signal; teardown runs whatever was installed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from fedcare_core.run import interrupts
from fedcare_core.run.interrupts import Interrupted, as_interrupted, signals_raise
from tests.conftest import REPO_ROOT


@pytest.fixture
def restore_signals() -> Iterator[None]:
    saved = {s: signal.getsignal(s) for s in interrupts.STOP_SIGNALS}
    yield
    for s, h in saved.items():
        signal.signal(s, h)


def _flag_only(calls: list[int]):
    def handler(signum, _frame):
        calls.append(signum)

    return handler


def test_sigint_raises_inside_even_when_a_library_left_a_flag_only_handler(restore_signals):
    calls: list[int] = []
    flag = _flag_only(calls)
    signal.signal(signal.SIGINT, flag)
    reached_finally = False
    with pytest.raises(Interrupted) as caught:
        with signals_raise():
            try:
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.5)  # the handler runs here at the latest
                pytest.fail("SIGINT did not interrupt the block")
            finally:
                reached_finally = True
    assert reached_finally
    assert caught.value.exit_status == 130
    assert calls == []  # the library's handler was bypassed inside ...
    assert signal.getsignal(signal.SIGINT) is flag  # ... and is back afterwards


@pytest.mark.parametrize(("sig", "status"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_sigterm_and_sighup_raise_with_their_status_and_handlers_come_back(
    restore_signals, sig, status
):
    before = signal.getsignal(sig)
    with pytest.raises(Interrupted, match=signal.Signals(sig).name) as caught:
        with signals_raise():
            os.kill(os.getpid(), sig)
            time.sleep(0.5)
            pytest.fail("the signal did not interrupt the block")
    assert (caught.value.signum, caught.value.exit_status) == (sig, status)
    assert isinstance(caught.value, KeyboardInterrupt)  # code that stops on Ctrl-C stops too
    assert signal.getsignal(sig) == before


def test_only_the_first_signal_raises_and_is_remembered_until_the_outer_block_ends(
    restore_signals,
):
    torn_down = False
    with pytest.raises(Interrupted) as caught:
        with signals_raise():
            try:
                with signals_raise():
                    os.kill(os.getpid(), signal.SIGTERM)
                    time.sleep(0.5)
            finally:
                os.kill(os.getpid(), signal.SIGINT)  # a second signal during the teardown
                time.sleep(0.2)
                with pytest.raises(Interrupted, match="SIGTERM"):
                    interrupts.check()  # no result is written from here on
                torn_down = True
    assert torn_down
    assert caught.value.signum == signal.SIGTERM
    assert interrupts.received() is None  # a later run in this process starts afresh
    interrupts.check()


def test_an_ignored_sigint_stays_ignored(restore_signals):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with signals_raise():
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def test_a_plain_keyboard_interrupt_is_sigint():
    assert as_interrupted(KeyboardInterrupt()).signum == signal.SIGINT
    term = Interrupted(signal.SIGTERM)
    assert as_interrupted(term) is term


_CHILD = """
import os, signal, sys, time
from fedcare_core.run.interrupts import child_ignores_interrupts
signal.signal(signal.SIGTERM, lambda *a: print("handled", flush=True))
child_ignores_interrupts()
os.kill(os.getpid(), signal.SIGINT)
time.sleep(0.2)
print("survived SIGINT", flush=True)
os.kill(os.getpid(), signal.SIGTERM)
time.sleep(5)
"""


def test_a_worker_ignores_sigint_and_dies_silently_on_sigterm():
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.stdout == "survived SIGINT\n"
    assert proc.returncode == -signal.SIGTERM
    assert proc.stderr == ""


def test_exit_now_flushes_and_skips_the_interpreter_exit():
    code = (
        "import atexit, sys, threading, time\n"
        "from fedcare_core.run.interrupts import exit_now\n"
        "threading.Thread(target=time.sleep, args=(60,)).start()\n"  # would hold a normal exit
        "atexit.register(lambda: print('atexit ran'))\n"
        "print('last line', end='')\n"
        "exit_now(143)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert time.monotonic() - t0 < 30
    assert (proc.returncode, proc.stdout) == (143, "last line")
