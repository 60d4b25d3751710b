"""Where a grid runs: a local Dask cluster on loopback, or an existing scheduler.

A local cluster is one worker process per core (``processes=True``), one thread each: the
networks are small, so a second thread in one process gains less than a second process, and a
process keeps its own loaded dataset (``fedcare.app.grid_jobs._dataset``) for every
job it runs. Every socket it opens (scheduler, nannies, workers, the scheduler's HTTP server)
listens on 127.0.0.1 only; a cluster across machines is started by hand (``dask scheduler``,
``dask worker``, README "Across machines") and named by its address.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from distributed import Client, LocalCluster, WorkerPlugin

from fedcare_core.errors import ConfigError
from fedcare_core.run.interrupts import child_ignores_interrupts

#: The only interface a local cluster listens on.
LOOPBACK = "127.0.0.1"
#: Seconds to wait for an existing scheduler to answer before giving up.
CONNECT_TIMEOUT_S = 30


def local_cluster_kwargs(workers: int | None = None) -> dict[str, Any]:
    """Keyword arguments of a local ``LocalCluster`` (and ``DaskTaskRunner``'s ``cluster_kwargs``).

    Parameters
    ----------
    workers
        Worker processes (None: one per core).

    Returns
    -------
    dict[str, Any]
        ``n_workers``, one thread per worker, processes, and loopback-only addresses.

    Raises
    ------
    ConfigError
        ``workers`` below 1.
    """
    n = workers if workers is not None else (os.cpu_count() or 1)
    if n < 1:
        raise ConfigError(f"workers must be ≥ 1, got {n}")
    return {
        "n_workers": n,
        "threads_per_worker": 1,
        "processes": True,
        # Scheduler, nannies and workers bind here; a random free port each.
        "host": LOOPBACK,
        "scheduler_port": 0,
        # LocalCluster's default ":8787" binds the scheduler's HTTP server to every interface;
        # loopback and a free port instead (two grids at once do not collide either).
        "dashboard_address": f"{LOOPBACK}:0",
        "worker_dashboard_address": None,
    }


#: The transports a scheduler's address may name (Dask's own, but ``inproc``: in this process).
_ADDRESS_SCHEMES = ("tcp", "tls", "ws", "wss", "ucx")


def check_address(address: str, name: str = "address") -> str:
    """``address`` as Dask names a scheduler (``[SCHEME://]HOST:PORT``), else refuse.

    Parameters
    ----------
    address
        E.g. ``tcp://10.0.0.5:8786`` (``tcp://`` when no scheme is given, as Dask reads it).
    name
        What the message calls it (``--dask-address``).

    Raises
    ------
    ConfigError
        Naming ``name``: an unknown scheme, a missing host, or a port not in [1, 65535].
    """
    from distributed.comm.addressing import parse_address, parse_host_port

    form = "[tcp|tls|ws|wss|ucx://]HOST:PORT, e.g. tcp://10.0.0.5:8786"
    try:
        scheme, location = parse_address(address)
        host, port = parse_host_port(location)
    except (ValueError, TypeError):
        raise ConfigError(f"{name} must be {form}, got {address!r}") from None
    if scheme not in _ADDRESS_SCHEMES or not host or not 1 <= int(port) <= 65535:
        raise ConfigError(f"{name} must be {form}, got {address!r}")
    return address


@contextmanager
def grid_client(address: str | None = None, workers: int | None = None) -> Iterator[Client]:
    """A Dask client for a grid; a local cluster it starts is closed on leaving.

    Parameters
    ----------
    address
        An existing scheduler, e.g. ``tcp://10.0.0.5:8786`` (None: start a local cluster).
    workers
        Worker processes of the local cluster (None: one per core). An existing cluster has
        its own workers, so giving both is an error.

    Yields
    ------
    Client
        Not set as Dask's default client, so nothing else in the process picks it up.

    Raises
    ------
    ConfigError
        ``address`` and ``workers`` both given, ``workers`` below 1, an ``address`` that is
        not one (:func:`check_address`), or no scheduler answering at it.
    """
    if address is not None:
        if workers is not None:
            raise ConfigError(
                "workers sizes the local cluster; an existing cluster at "
                f"{address} runs the grid on its own workers"
            )
        check_address(address)
        try:
            client = Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as exc:
            detail = " ".join(str(exc).split())  # one line, whatever the library wrote
            raise ConfigError(f"no Dask scheduler answers at {address}: {detail}") from None
        with client:
            yield client
        return
    kwargs = local_cluster_kwargs(workers)
    # Leaving the block closes the client, then the cluster: its nannies stop their workers,
    # so no worker of ours is left running (or writing a cell) after an error or Ctrl-C. After
    # Ctrl-C or SIGTERM the workers are killed first: a graceful close would wait for the cells
    # they are computing.
    before = dict(os.environ)
    others = set(multiprocessing.active_children())
    quieted: dict[str, int] = {}
    try:
        with LocalCluster(**kwargs) as cluster:
            _restore_environment(before)
            with Client(cluster, set_as_default=False) as client:
                client.register_plugin(_IgnoreInterrupts(), name="fedcare-ignore-interrupts")
                try:
                    yield client
                except KeyboardInterrupt:
                    # Killed workers make the scheduler log closed comms, some with their
                    # traceback, while it closes: the run is ending on purpose, so say nothing.
                    quieted = _quiet_loggers(INTERRUPT_QUIET_LOGGERS)
                    for proc in set(multiprocessing.active_children()) - others:
                        proc.kill()
                    raise
    finally:
        _restore_environment(before)
        _restore_logger_levels(quieted)


class _IgnoreInterrupts(WorkerPlugin):
    """A local worker ignores SIGINT (:func:`fedcare_core.run.interrupts.child_ignores_interrupts`).

    The terminal's Ctrl-C reaches every process of the group: the grid's process stops the
    workers; each worker would otherwise print its own KeyboardInterrupt traceback.
    """

    def setup(self, worker: Any) -> None:
        """Run in the worker process when it starts (and in each worker started later)."""
        child_ignores_interrupts()


#: The libraries whose log records a grid's interrupted close would print (Dask's and its loop's).
INTERRUPT_QUIET_LOGGERS = ("distributed", "tornado", "asyncio")


def _quiet_loggers(prefixes: tuple[str, ...]) -> dict[str, int]:
    """Raise every logger named ``prefix`` or ``prefix.*`` above CRITICAL; their old levels.

    Child loggers with a level of their own (Dask's logging configuration sets some) are
    raised too, so none of them prints. :func:`_restore_logger_levels` puts them back.
    """
    names = [n for n in logging.root.manager.loggerDict if n.split(".")[0] in prefixes]
    old: dict[str, int] = {}
    for name in {*prefixes, *names}:
        logger = logging.getLogger(name)
        old[name] = logger.level
        logger.setLevel(logging.CRITICAL + 1)
    return old


def _restore_logger_levels(levels: dict[str, int]) -> None:
    """Give each named logger back the level :func:`_quiet_loggers` recorded."""
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


def _restore_environment(before: dict[str, str]) -> None:
    """Put this process's environment back as ``before``, after starting a local cluster.

    A nanny running in this process sets its ``pre-spawn-environ`` (``OMP_NUM_THREADS=1`` and
    the like, meant for its worker) in ``os.environ`` before spawning the worker, so every
    process this one starts later would inherit it (and a torch started later would run one
    thread). Called once the workers are up and again when the cluster has closed (a worker
    the nanny restarted sets them anew).
    """
    for key in set(os.environ) - set(before):
        del os.environ[key]
    os.environ.update(before)


def cluster_workers(client: Client) -> int:
    """How many worker processes the client's cluster has right now."""
    return len(client.nthreads())
