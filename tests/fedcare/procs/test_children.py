"""The deployment runner's process helpers: a forked child dies with its parent."""

from __future__ import annotations

import os
import time

_FORKER = """
import os, sys, time
from fedcare.procs.children import die_with_parent
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

    from fedcare.procs.marked import alive
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
