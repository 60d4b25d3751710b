"""A watchdog that ends a run's marked processes when the process that started it is gone.

``python -m fedcare.procs.watchdog ENV_NAME TOKEN GRACE_S`` waits for end of file on its stdin,
a pipe whose only writer is the process that started it (:func:`start_watchdog`). That happens
when the starter closes it (its run ended; a clean run has already stopped its processes, so
there is nothing left to do) or when the starter dies, even by SIGKILL, when no handler or
``finally`` runs. Then every process carrying ``ENV_NAME=TOKEN`` gets SIGTERM, and SIGKILL after
``GRACE_S``. This covers the helpers a library starts below its own processes that only poll
for their parent (Ray's dashboard and runtime-env agents take over 30 s to notice).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from fedcare.procs.marked import terminate_marked


def start_watchdog(env_name: str, token: str, grace_s: float) -> subprocess.Popen[bytes]:
    """Start a watchdog for the processes marked ``env_name=token``.

    Parameters
    ----------
    env_name, token
        The marker (the watchdog's own environment does not carry it).
    grace_s
        Seconds between SIGTERM and SIGKILL.

    Returns
    -------
    subprocess.Popen[bytes]
        Close its ``stdin`` when the run has ended, then wait for it.
    """
    env = {k: v for k, v in os.environ.items() if k != env_name}
    return subprocess.Popen(
        [sys.executable, "-m", "fedcare.procs.watchdog", env_name, token, str(grace_s)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,  # the terminal's Ctrl-C and a group kill go to the run only
    )


def stop_watchdog(watchdog: subprocess.Popen[bytes], timeout_s: float) -> None:
    """Close the watchdog's pipe (the run ended) and reap it; SIGKILL it after ``timeout_s``."""
    if watchdog.stdin is not None:
        watchdog.stdin.close()
    try:
        watchdog.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        watchdog.kill()
        watchdog.wait()


def main(argv: list[str]) -> int:
    """Wait for end of file on stdin, then end the marked processes."""
    env_name, token, grace_s = argv[0], argv[1], float(argv[2])
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while sys.stdin.buffer.read(4096):
        pass
    terminate_marked(env_name, token, grace_s)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
