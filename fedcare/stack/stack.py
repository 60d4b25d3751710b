"""Bring the local stack up and down, and report on it."""

from __future__ import annotations

import secrets
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fedcare.procs.marked import alive, terminate_marked
from fedcare.procs.ports import port_open
from fedcare.procs.services import log_tail, read_pid, start_detached, stop_group, wait_http
from fedcare.stack import schedule
from fedcare.stack.settings import TOKEN_ENV, WORK_POOL, StackConfig
from fedcare_core.errors import FedcareError
from fedcare_core.files.atomic import write_atomic

#: Services in start order (stopped in reverse).
_SERVICES = ("prefect-server", "mlflow-server", "prefect-worker")
#: Seconds to wait for a server to answer its health check (2 busy cores: be generous).
_STARTUP_TIMEOUT_S = 180.0
#: Seconds to wait for the worker to report to the server.
_WORKER_TIMEOUT_S = 90.0
#: Seconds a one-shot Prefect CLI call (work pool, deploy) may take.
CLI_TIMEOUT_S = 300.0
TOKEN_FILE = "token"
#: Modes of the state folder (and its sub-folders) and of the token file.
_PRIVATE_DIR_MODE = 0o700

_Say = Callable[[str], None]


class StackError(FedcareError):
    """The stack could not be brought up (the message names the service and its log)."""


@dataclass(frozen=True)
class _ServiceStatus:
    """One service's state: its pid (if running) and whether it answers."""

    name: str
    pid: int | None
    running: bool
    url: str | None
    healthy: bool
    log: Path


def _bin(config: StackConfig, name: str) -> str:
    return str(Path(config.python).parent / name)


def _pid_file(config: StackConfig, name: str) -> Path:
    return config.pids_dir / f"{name}.pid"


def _log(config: StackConfig, name: str) -> Path:
    return config.logs_dir / f"{name}.log"


def _health_url(config: StackConfig, name: str) -> str | None:
    if name == "prefect-server":
        return f"{config.prefect_api_url}/health"
    if name == "mlflow-server":
        return f"{config.mlflow_url}/health"
    return None


def _argv(config: StackConfig, name: str) -> list[str]:
    if name == "prefect-server":
        return [
            _bin(config, "prefect"), "server", "start",
            "--host", config.host, "--port", str(config.prefect_port), "--analytics-off",
        ]  # fmt: skip
    if name == "mlflow-server":
        store = config.mlflow_store
        # MLflow checks the Host header; its default list covers loopback and private ranges.
        allowed = [] if config.loopback else [
            "--allowed-hosts", f"{config.host},{config.host}:{config.mlflow_port}",
        ]  # fmt: skip
        return [
            _bin(config, "mlflow"), "server",
            "--host", config.host, "--port", str(config.mlflow_port), "--workers", "1",
            "--backend-store-uri", f"sqlite:///{store / 'mlflow.db'}",
            "--artifacts-destination", str(store / "artifacts"), "--serve-artifacts", *allowed,
        ]  # fmt: skip
    return [
        _bin(config, "prefect"), "worker", "start", "--pool", WORK_POOL, "--type", "process",
        "--name", "fedcare-local-worker", "--install-policy", "never",
    ]  # fmt: skip


def _port(config: StackConfig, name: str) -> int | None:
    return {"prefect-server": config.prefect_port, "mlflow-server": config.mlflow_port}.get(name)


def _token(config: StackConfig) -> str:
    path = config.state_dir / TOKEN_FILE
    try:
        token = path.read_text().strip()
    except OSError:
        token = ""
    if not token or not any(alive(read_pid(_pid_file(config, s))) for s in _SERVICES):
        token = secrets.token_hex(16)
        _private_dir(path.parent)
        write_private(path, token + "\n")
    return token


def _private_dir(path: Path) -> Path:
    """Create ``path`` owner-only (0700); tighten a looser one an older version left."""
    path.mkdir(parents=True, exist_ok=True, mode=_PRIVATE_DIR_MODE)
    if path.stat().st_mode & 0o077:
        path.chmod(_PRIVATE_DIR_MODE)
    return path


def write_private(path: Path, text: str) -> None:
    """Replace ``path`` by a file created owner-only (0600) from the start.

    Written to a temporary file then renamed, so an older file's looser mode never carries
    over (``O_CREAT`` keeps an existing file's mode).
    """
    write_atomic(path, text.encode())


def _running(config: StackConfig, name: str) -> int | None:
    pid = read_pid(_pid_file(config, name))
    return pid if alive(pid) else None


def _check_ports_free(config: StackConfig) -> None:
    """Refuse a server's port that another program holds (a running service keeps its own).

    Raises
    ------
    StackError
        Naming the service, the port and the option that moves it.
    """
    for name in _SERVICES:
        if _running(config, name) is None:
            _check_port_free(config, name)


def _check_port_free(config: StackConfig, name: str) -> None:
    port = _port(config, name)
    if port is not None and port_open(port, config.host):
        flag = "--prefect-port" if name == "prefect-server" else "--mlflow-port"
        raise StackError(
            f"{flag} {port} on {config.host} is taken by another program (not the stack's "
            f"{name}); stop it or choose another port"
        )


def _start(config: StackConfig, name: str, token: str, say: _Say) -> int:
    pid = _running(config, name)
    if pid is not None:
        say(f"{name}: already running (pid {pid})")
        return pid
    _check_port_free(config, name)
    pid = start_detached(
        _argv(config, name),
        env=config.service_env(token),
        log=_log(config, name),
        pid_file=_pid_file(config, name),
        cwd=config.project,
    )
    say(f"{name}: started (pid {pid}, log {_log(config, name)})")
    return pid


def _wait_healthy(config: StackConfig, name: str, pid: int) -> None:
    url = _health_url(config, name)
    if url is not None and not wait_http(url, _STARTUP_TIMEOUT_S, pid=pid):
        raise StackError(
            f"{name} did not answer {url} within {_STARTUP_TIMEOUT_S:.0f} s; last lines of "
            f"{_log(config, name)}:\n{log_tail(_log(config, name))}"
        )


def _cli(config: StackConfig, token: str, *args: str) -> None:
    """Run a Prefect CLI command against the stack's server; raise with its output on failure."""
    log = _log(config, "prefect-cli")
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        out.write(f"\n$ prefect {' '.join(args)}\n".encode())
        out.flush()
        done = subprocess.run(
            [_bin(config, "prefect"), *args],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=config.service_env(token),
            cwd=config.project,
            timeout=CLI_TIMEOUT_S,
            check=False,
        )
    if done.returncode != 0:
        raise StackError(
            f"'prefect {' '.join(args)}' failed (exit {done.returncode}); last lines of "
            f"{log}:\n{log_tail(log)}"
        )


def _wait_worker(config: StackConfig, pid: int) -> None:
    """Wait until the work pool lists an online worker."""
    import httpx

    url = f"{config.prefect_api_url}/work_pools/{WORK_POOL}/workers/filter"
    deadline = time.monotonic() + _WORKER_TIMEOUT_S
    while time.monotonic() < deadline:
        if not alive(pid):
            break
        try:
            reply = httpx.post(url, json={}, timeout=5.0)
            if reply.status_code == 200 and any(w.get("status") == "ONLINE" for w in reply.json()):
                return
        except httpx.HTTPError:
            pass
        time.sleep(1.0)
    log = _log(config, "prefect-worker")
    raise StackError(
        f"the Prefect worker did not come online within {_WORKER_TIMEOUT_S:.0f} s; last lines "
        f"of {log}:\n{log_tail(log)}"
    )


def up(config: StackConfig, say: _Say = print) -> list[_ServiceStatus]:
    """Start whatever is not running, deploy ``prefect.yaml``, and wait until all is ready.

    On any failure everything is stopped again (nothing is left half up).

    Parameters
    ----------
    config
        Ports and folders.
    say
        Progress messages.

    Returns
    -------
    list of ServiceStatus
        Every service, running and healthy.

    Raises
    ------
    StackError
        If a port is taken, or a service does not start or answer in time (with its log).
    """
    _check_ports_free(config)  # before any folder, token, pid file or process
    # The state folder holds the token, pid files, logs and Prefect's database: owner-only.
    for path in (config.state_dir, config.prefect_home, config.logs_dir, config.pids_dir):
        _private_dir(path)
    config.mlflow_store.mkdir(parents=True, exist_ok=True)
    token = _token(config)
    try:
        prefect_pid = _start(config, "prefect-server", token, say)
        mlflow_pid = _start(config, "mlflow-server", token, say)
        _wait_healthy(config, "prefect-server", prefect_pid)
        say(f"prefect-server: ready at {config.prefect_url}")
        _wait_healthy(config, "mlflow-server", mlflow_pid)
        say(f"mlflow-server: ready at {config.mlflow_url}")
        _cli(config, token, "work-pool", "create", WORK_POOL, "--type", "process", "--overwrite")
        chosen = schedule.keep_across_deploy(config)  # `prefect deploy` re-creates schedules
        _cli(
            config, token, "deploy", "--all", "--prefect-file", str(config.project / "prefect.yaml")
        )
        say(f"deployments of {config.project / 'prefect.yaml'} applied (work pool {WORK_POOL})")
        if chosen is not None:
            schedule.apply(config, chosen)
        in_force = schedule.on_server(config)
        if in_force is not None:
            schedule.save(config, in_force)
            say(f"schedule {in_force.describe()} (change: fedcare stack schedule)")
        worker_pid = _start(config, "prefect-worker", token, say)
        _wait_worker(config, worker_pid)
        say("prefect-worker: online")
    except BaseException:
        down(config, say=say)
        raise
    return status(config)


def down(config: StackConfig, say: _Say = print) -> list[int]:
    """Stop the worker, the MLflow server and the Prefect server, then every marked process.

    Parameters
    ----------
    config
        Ports and folders.
    say
        Progress messages.

    Returns
    -------
    list of int
        Pids of leftover processes found by the marker sweep (flow runs, task workers).
    """
    for name in reversed(_SERVICES):
        pid = _running(config, name)
        if pid is not None:
            killed = stop_group(pid)
            say(f"{name}: stopped (pid {pid}{', killed' if killed else ''})")
        _pid_file(config, name).unlink(missing_ok=True)
    leftovers: list[int] = []
    try:
        token = (config.state_dir / TOKEN_FILE).read_text().strip()
    except OSError:
        token = ""
    if token:
        leftovers = terminate_marked(TOKEN_ENV, token, 5.0)
        if leftovers:
            say(f"stopped {len(leftovers)} leftover process(es): {leftovers}")
    return leftovers


def status(config: StackConfig) -> list[_ServiceStatus]:
    """Each service's pid, whether it runs, and whether its health check answers."""
    import httpx

    out = []
    for name in _SERVICES:
        pid = _running(config, name)
        url = _health_url(config, name)
        healthy = False
        if pid is not None and url is not None:
            try:
                healthy = httpx.get(url, timeout=2.0).status_code == 200
            except httpx.HTTPError:
                healthy = False
        elif pid is not None:
            healthy = True
        shown = {"prefect-server": config.prefect_url, "mlflow-server": config.mlflow_url}
        out.append(
            _ServiceStatus(name, pid, pid is not None, shown.get(name), healthy, _log(config, name))
        )
    return out
