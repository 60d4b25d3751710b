"""Run a deployment on the stack and wait for it: ``prefect deployment run --watch``, made safe.

Prefect 3.7's ``--watch`` follows the flow run through the server's event stream only. When the
server's SQLite database is busy (Prefect's own ``database is locked`` errors, e.g. in
``mark_deployments_ready``), the stream can miss the run's final event: the run is Completed
in the database, and ``--watch`` waits for ever. :func:`run_deployment` runs the same command,
passes its output through, and polls the flow run's state over the API beside it; once the
state is final and the watch has not ended within a grace period, it stops the watch and exits
by the state, saying so.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO
from uuid import UUID

from fedcare.stack.settings import StackConfig

#: Prefect's final state types.
_FINAL_STATES = frozenset({"COMPLETED", "FAILED", "CRASHED", "CANCELLED"})

#: Prefect's words before the exception in a failed run's state message, and the error's type.
_PREAMBLE = re.compile(
    r"^(?:Flow run encountered an exception|Task run encountered an exception)"
    r"(?: \w+)?:\s*(?:[A-Za-z_][\w.]*(?:Error|Exception)[\w]*:\s*)?"
)

_UUID = re.compile(r"UUID: ([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})")

StateReader = Callable[[str], "str | None"]


def _prefect_state_reader(config: StackConfig) -> StateReader:
    """Read a flow run's state type (``"COMPLETED"``, …) from the stack's Prefect API."""

    def read(flow_run_id: str) -> str | None:
        from prefect.client.orchestration import SyncPrefectClient

        with SyncPrefectClient(config.prefect_api_url) as client:
            state = client.read_flow_run(UUID(flow_run_id)).state
        return None if state is None else str(state.type.value)

    return read


def _prefect_failure_reader(config: StackConfig) -> StateReader:
    """Read why a flow run failed: its final state's message, without Prefect's preamble."""

    def read(flow_run_id: str) -> str | None:
        from prefect.client.orchestration import SyncPrefectClient

        with SyncPrefectClient(config.prefect_api_url) as client:
            state = client.read_flow_run(UUID(flow_run_id)).state
        if state is None or state.type.value == "COMPLETED" or not state.message:
            return None
        return failure_line(state.message)

    return read


def failure_line(message: str) -> str:
    """The error's own line from a state message (``Flow run encountered an exception: …``)."""
    text = _PREAMBLE.sub("", message.strip(), count=1)
    return text.splitlines()[0] if text else message.strip()


def watch_command(config: StackConfig, deployment: str, params: Sequence[str]) -> list[str]:
    """``prefect deployment run <deployment> --watch -p …`` with the stack's ``prefect``."""
    argv = [str(Path(config.python).parent / "prefect"), "deployment", "run", deployment, "--watch"]
    for p in params:
        argv += ["-p", p]
    return argv


def run_deployment(
    config: StackConfig,
    deployment: str,
    params: Sequence[str],
    *,
    out: TextIO,
    say: Callable[[str], None],
    read_state: StateReader | None = None,
    read_failure: StateReader | None = None,
    argv: Sequence[str] | None = None,
    poll_s: float = 5.0,
    grace_s: float = 30.0,
) -> int:
    """Start a flow run of ``deployment``, show Prefect's watch and wait for a final state.

    Parameters
    ----------
    config
        The stack (its Prefect API and the ``prefect`` next to its Python).
    deployment
        ``flow/deployment``, e.g. ``fedcare/full-experiment``.
    params
        ``key=value`` flow parameters, as ``prefect deployment run -p`` takes them.
    out
        Where the watch's output goes.
    say
        Where this function's own messages go.
    read_state, read_failure
        Read a flow run's state type, and why it failed (one line); the stack's API if omitted.
    argv
        The command to run instead of :func:`watch_command` (tests).
    poll_s, grace_s
        Seconds between state polls; how long the watch may run on after the state is final.

    Returns
    -------
    int
        The watch's exit status when it ends by itself; otherwise 0 for a Completed run and 1
        for any other final state. A run that did not complete is followed by one line saying
        why (the failure's own message, e.g. the data check that refused the data).
    """
    reader = _prefect_state_reader(config) if read_state is None else read_state
    command = list(argv) if argv is not None else watch_command(config, deployment, params)
    proc = subprocess.Popen(
        command,
        env=dict(os.environ) | config.client_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
    )
    found: list[str] = []

    def pass_through() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            out.write(line)
            out.flush()
            if not found and (match := _UUID.search(line)):
                found.append(match.group(1))

    copier = threading.Thread(target=pass_through, daemon=True)
    copier.start()
    final: str | None = None
    final_at = 0.0
    try:
        while proc.poll() is None:
            time.sleep(poll_s)
            if not found or proc.poll() is not None:
                continue
            if final is None:
                state = _read_quietly(reader, found[0])
                if state in _FINAL_STATES:
                    final, final_at = state, time.monotonic()
            elif time.monotonic() - final_at > grace_s:
                say(
                    f"flow run {found[0]} is {final}, but Prefect's watch missed its end "
                    f"(event stream); stopped watching after {grace_s:.0f} s"
                )
                proc.terminate()
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                copier.join(timeout=5)
                rc = 0 if final == "COMPLETED" else 1
                break
        else:
            copier.join(timeout=5)
            rc = int(proc.returncode)
    except BaseException:
        proc.kill()
        raise
    if rc != 0 and found:
        _say_why(
            found[0], _prefect_failure_reader(config) if read_failure is None else read_failure, say
        )
    return rc


def _say_why(flow_run_id: str, read_failure: StateReader, say: Callable[[str], None]) -> None:
    """One line saying why a flow run did not complete, if its state says."""
    why = _read_quietly(read_failure, flow_run_id)
    if why:
        say(f"flow run {flow_run_id} failed: {why}")


def _read_quietly(read_state: StateReader, flow_run_id: str) -> str | None:
    """A state read that treats an unreachable or busy API as "not known yet"."""
    try:
        return read_state(flow_run_id)
    except Exception:  # the watch itself reports a server that is down
        return None
