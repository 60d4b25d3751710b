"""``--backend flower-sim``: Stage 1 on Flower's Simulation Engine (Ray), as a Stage1Runner.

The ServerApp runs in a thread of this process; each client's ClientApp runs in a Ray actor
and reads that client's folder from the run's working folder (the same files a SuperNode reads
in deployment). The Ray instance is private to the run: it is started with
``address="local"`` (never attached to an existing cluster, whatever ``RAY_ADDRESS`` says), in
its own temporary folder, and shut down before returning. A process that already has Ray
initialised is refused rather than shared.

Why the deprecated :func:`flwr.simulation.run_simulation`
    It is public API (``flwr.simulation.__all__``), and the only one of Flower 1.42 that runs a
    simulation in the calling process. Flower 1.42 deprecates it (a ``DEPRECATED FEATURE``
    warning in Flower's log at every call, not a Python warning) in favour of ``flwr run``,
    whose every simulation path goes through a SuperLink: the managed local SuperLink
    (``address = ":local:"``) is started on demand and keeps running in the background after
    the command, which this project's no-orphan-process rule forbids; a
    ``flower-superlink --simulation`` started and torn down by this runner would run the
    ServerApp and the ClientApps in a ``flwr-simulation`` process of the SuperLink's, so the
    in-process round hook and the data locator handed to the ClientApp would not reach them,
    and Ray's private-instance settings (:meth:`SimulationStage1Runner.backend_config`) would
    have to travel as federation options.
    That is the deployment runner with another SuperLink mode, not a simulation; so this
    runner keeps the Python API until Flower removes it, and ``flower-deployment`` is the
    SuperLink path.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import shutil
import signal
import tempfile
import threading
import time
import uuid
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

from fedcare.flower.client_app import build_client_app, simulation_locator
from fedcare.flower.console import flower_console
from fedcare.flower.flower_options import FlowerConfig
from fedcare.flower.run_plan import CheckpointTarget
from fedcare.flower.secagg import secure_plan
from fedcare.flower.secagg_client import build_secagg_client_app
from fedcare.flower.secagg_server import build_secure_server_app
from fedcare.flower.server_app import build_server_app
from fedcare.flower.workspace import (
    FLOWER_ENV,
    FlowerRunError,
    RoundTimer,
    Workspace,
    child_pythonpath,
    collect_result,
    prepare_baseline_workspace,
    prepare_workspace,
    remove_workspace,
)
from fedcare.procs.children import TOKEN_ENV
from fedcare.procs.marked import terminate_marked
from fedcare.procs.ports import LOOPBACK
from fedcare.procs.watchdog import start_watchdog, stop_watchdog
from fedcare_core import algorithms
from fedcare_core.algorithms.union.features import UnionLayout
from fedcare_core.config import ExperimentConfig, ModelConfig, Stage1Config
from fedcare_core.data.clients import Federation
from fedcare_core.nn.training import ProgressFn
from fedcare_core.run.interrupts import STOP_SIGNALS, received
from fedcare_core.stage1.loop import RoundInfo, Stage1Result

#: Ray's switch for multi-node clusters, off: Ray's node IP is then loopback, and with it every
#: socket of its processes (GCS, raylet, object manager, workers, agents). Ray on Linux otherwise
#: resolves even ``_node_ip_address="127.0.0.1"`` to the machine's routable address and binds
#: its gRPC servers there and on ``::`` (measured with Ray 2.55.1; see docs/DESIGN.md).
_RAY_LOOPBACK_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
#: setproctitle (Ray names its processes ``ray::DashboardAgent`` …) writes a title longer than
#: the command line over the process's environment block, and with it the run's marker
#: (``FEDCARE_RUN_TOKEN``): the watchdog then could not find that process after a SIGKILL of
#: ``fedcare`` and it lived on. ``SPT_NOENV`` keeps the environment (titles are cut instead).
_RAY_PROCESS_ENV = {"SPT_NOENV": "1"}


@contextlib.contextmanager
def environment(values: Mapping[str, str]) -> Iterator[None]:
    """Set ``values`` in ``os.environ`` for the block; restore the previous values."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _no_records_after_a_signal(record: logging.LogRecord) -> bool:
    """A log filter: nothing once a stop signal has arrived, nor the ``run_simulation`` notice.

    After a signal the process is ending. Flower calls ``run_simulation`` deprecated: this
    runner uses it on purpose (``flwr run`` would start a SuperLink, as the deployment backend
    does), so its users are not told to change anything.
    """
    message = record.getMessage()
    if "run_simulation" in message and "DEPRECATED" in message:
        return False
    return received() is None


#: The least start-up wait of a simulation, whatever ``--startup-timeout`` says (seconds).
SIMULATION_STARTUP_S = 600.0


class SimulationStage1Runner:
    """A :data:`fedcare_core.run.pipeline.Stage1Runner` on Flower's Simulation Engine.

    Parameters
    ----------
    flower
        Timeouts and Ray resources.

    Attributes
    ----------
    timing
        Start-up and per-round wall times of the last run.
    token
        The environment marker of the last run's processes (see
        :mod:`fedcare.procs.children`).
    """

    @property
    def federated_baselines(self) -> tuple[str, ...]:
        """Baselines whose rounds this runner runs, read when asked (one installed since counts)."""
        return algorithms.federated_baselines()

    def __init__(self, flower: FlowerConfig | None = None) -> None:
        flower = (flower or FlowerConfig()).validate()
        # Its clients are actors Ray starts on this machine: none can be absent, only slow to
        # start (over 3 minutes on a loaded 2-core machine), so the start-up wait is longer.
        startup = max(flower.startup_timeout_s, SIMULATION_STARTUP_S)
        self.flower = replace(flower, startup_timeout_s=startup)
        self.timing: RoundTimer | None = None
        self.token = ""

    @property
    def in_memory(self) -> bool:
        """Client data in memory files, not on disk (files only for ``keep_workdir``)."""
        return not self.flower.keep_workdir

    def backend_config(self, ray_dir: str) -> dict[str, Any]:
        """Flower's backend config: a private local Ray instance with bounded resources.

        Its node IP is loopback (:data:`_RAY_LOOPBACK_ENV` makes Ray resolve
        ``_node_ip_address`` to it), the dashboard is off and bound to loopback if it were on.
        """
        return {
            "init_args": {
                "address": "local",
                "_node_ip_address": LOOPBACK,
                "dashboard_host": LOOPBACK,
                "num_cpus": self.flower.sim_num_cpus or os.cpu_count() or 1,
                "num_gpus": 0,
                "include_dashboard": False,
                "_temp_dir": ray_dir,
                "logging_level": "WARNING",
                "log_to_driver": False,
            },
            "client_resources": {"num_cpus": self.flower.sim_client_cpus, "num_gpus": 0.0},
        }

    def __call__(
        self,
        federation: Federation,
        model_config: ModelConfig,
        config: Stage1Config,
        seed: int,
        progress: ProgressFn | None,
        *,
        checkpoint: CheckpointTarget | None = None,
    ) -> Stage1Result:
        """Run Stage 1 and return the same :class:`Stage1Result` as the in-process runner.

        With ``checkpoint`` the ServerApp writes a Stage 1 checkpoint there after every round
        and continues after the one it finds there (``fedcare run --run-dir`` / ``--resume``).
        """
        self._check_ray()
        timer = RoundTimer(time.time())
        ws = prepare_workspace(
            federation,
            model_config,
            config,
            seed,
            self.flower,
            in_memory=self.in_memory,
            checkpoint=checkpoint,
        )
        return self._simulate(ws, timer, len(federation.clients), config.rounds, progress)

    def run_federated_baseline(
        self,
        algorithm: str,
        federation: Federation,
        layout: UnionLayout | None,
        config: ExperimentConfig,
        progress: ProgressFn | None,
    ) -> Stage1Result:
        """A baseline's rounds (:class:`fedcare_core.algorithms.base.BaselineBackend`)."""
        self._check_ray()
        timer = RoundTimer(time.time())
        ws = prepare_baseline_workspace(
            algorithm, federation, layout, config, self.flower, in_memory=self.in_memory
        )
        k = len(federation.clients)
        return self._simulate(ws, timer, k, ws.plan.stage1.rounds, progress)

    @staticmethod
    def _check_ray() -> None:
        """Refuse an initialised Ray, and a Ray that would not bind to loopback."""
        with environment(_RAY_LOOPBACK_ENV):
            import ray  # Ray reads RAY_LOOPBACK_ENV when first imported

            if ray.is_initialized():
                raise FlowerRunError(
                    "Ray is already initialised in this process; flower-sim needs a private "
                    "Ray instance (run it in a fresh process)"
                )
            node_ip = ray.util.get_node_ip_address()
        if not ipaddress.ip_address(node_ip).is_loopback:
            raise FlowerRunError(
                f"Ray would listen on {node_ip}, not loopback: it was imported in this process "
                "before flower-sim could configure it; set "
                + " ".join(f"{k}={v}" for k, v in _RAY_LOOPBACK_ENV.items())
                + " in the environment (or run flower-sim in a fresh process)"
            )

    def _start_ray(self, ray_dir: str) -> None:
        """Start the run's private Ray instance here, so Flower's backend uses it as it is.

        ``ray.init`` replaces the main thread's SIGTERM handler with one that calls
        ``sys.exit``, and Ray's C++ core installs a failure handler that dumps a native stack
        and aborts: the caller's handlers go back at once, so SIGTERM ends the run as
        :mod:`fedcare_core.run.interrupts` says (teardown, one message, status 143).
        """
        import ray

        main = threading.current_thread() is threading.main_thread()
        handlers = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS} if main else {}
        try:
            ray.init(**self.backend_config(ray_dir)["init_args"])
        finally:
            for sig, handler in handlers.items():
                signal.signal(sig, signal.SIG_DFL if handler is None else handler)

    def _simulate(
        self,
        ws: Workspace,
        timer: RoundTimer,
        num_clients: int,
        rounds: int,
        progress: ProgressFn | None,
    ) -> Stage1Result:
        """Run the workspace's plan on the Simulation Engine; always remove the workspace."""
        import ray
        from flwr.simulation import run_simulation

        self.timing = timer
        ray_dir = tempfile.mkdtemp(prefix="fcray-")  # short: Ray's socket paths are length-limited
        saved = {
            k: os.environ.get(k)
            for k in (
                *FLOWER_ENV,
                *_RAY_LOOPBACK_ENV,
                *_RAY_PROCESS_ENV,
                "PYTHONPATH",
                TOKEN_ENV,
                "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO",
            )
        }
        os.environ.update(FLOWER_ENV)
        os.environ.update(_RAY_LOOPBACK_ENV)  # Ray's own processes read it too
        os.environ.update(_RAY_PROCESS_ENV)
        os.environ["PYTHONPATH"] = child_pythonpath()
        os.environ["RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO"] = "0"  # no GPUs; silences Ray's notice
        # Ray's processes inherit this marker; after shutdown none may be left carrying it.
        self.token = os.environ[TOKEN_ENV] = uuid.uuid4().hex

        def on_round(info: RoundInfo, _wall_s: float) -> None:
            if progress is not None:
                progress("stage1", info.round, rounds)

        # If this process dies without its teardown (SIGKILL), the watchdog ends Ray's processes.
        watchdog = start_watchdog(TOKEN_ENV, self.token, self.flower.shutdown_grace_s)
        # After a signal, Flower's worker threads (blocked on the actors being stopped) would
        # log each lost actor as an error with a traceback: the run ends on purpose.
        logging.getLogger("flwr").addFilter(_no_records_after_a_signal)
        try:
            self._start_ray(ray_dir)
            # Flower's Ray transport sets a process-wide "once" DeprecationWarning filter when
            # imported, and Ray raises its own: keep both inside the run, restore the caller's.
            # Flower's per-round INFO lines stay off the console (FLWR_LOG_LEVEL brings them).
            with warnings.catch_warnings(), flower_console():
                warnings.simplefilter("ignore", DeprecationWarning)
                secure = secure_plan(ws.plan)  # SecAgg+: Flower's legacy-path apps
                server = build_secure_server_app if secure else build_server_app
                client = build_secagg_client_app if secure else build_client_app
                run_simulation(
                    server_app=server(ws.plan_path, on_round),
                    client_app=client(simulation_locator(ws.clients_dir, ws.data_paths)),
                    num_supernodes=num_clients,
                    backend_config=self.backend_config(ray_dir),
                )
            timer.finish(ws)
            return collect_result(ws, "flower-sim")
        finally:
            if ray.is_initialized():
                ray.shutdown()
            terminate_marked(TOKEN_ENV, self.token, self.flower.shutdown_grace_s, wait_first=True)
            stop_watchdog(watchdog, self.flower.shutdown_grace_s)
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
            shutil.rmtree(ray_dir, ignore_errors=True)
            remove_workspace(ws, self.flower.keep_workdir)
