"""The deployment runner's signal helpers: teardown must run whatever handler was installed."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import pytest

from fedcare_flower.processes import Terminated, signals_raise


@pytest.fixture
def restore_signals() -> Iterator[None]:
    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    saved = {s: signal.getsignal(s) for s in sigs}
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
    with pytest.raises(KeyboardInterrupt):
        with signals_raise():
            try:
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.5)  # the handler runs here at the latest
                pytest.fail("SIGINT did not interrupt the block")
            finally:
                reached_finally = True
    assert reached_finally
    assert calls == []  # the library's handler was bypassed inside ...
    assert signal.getsignal(signal.SIGINT) is flag  # ... and is back afterwards


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_raise_terminated_and_handlers_come_back(restore_signals, sig):
    before = signal.getsignal(sig)
    with pytest.raises(Terminated, match=signal.Signals(sig).name):
        with signals_raise():
            os.kill(os.getpid(), sig)
            time.sleep(0.5)
            pytest.fail("the signal did not interrupt the block")
    assert signal.getsignal(sig) == before


def test_an_ignored_sigint_stays_ignored(restore_signals):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with signals_raise():
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN


_FORKER = """
import os, sys, time
from fedcare_flower.processes import die_with_parent
parent = os.getpid()
pid = os.fork()
if pid == 0:
    die_with_parent(parent)
    time.sleep(600)
    os._exit(0)
print(pid, flush=True)
time.sleep(600)
"""


def test_a_forked_child_dies_with_its_killed_parent():
    import subprocess
    import sys
    import time

    from fedcare_procs import alive
    from tests.conftest import REPO_ROOT

    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", _FORKER], stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None
    child = int(proc.stdout.readline())
    time.sleep(0.3)
    assert alive(child)
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 5
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child)
