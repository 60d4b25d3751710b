"""``--backend flower-deployment``: a real Flower federation of separate OS processes on loopback.

The runner (a :data:`fedcare_core.run.pipeline.Stage1Runner`) hands each client's data over in an
anonymous memory file of its own (:func:`fedcare.flower.workspace.memory_handover`: nothing on
any disk, gone when the runner's process dies; with ``--keep-workdir``, an owner-only folder
instead), then starts

* one ``flower-superlink`` (HTTPS on a free loopback port, or on the address the user named
  in ``FlowerConfig.bind_address``, with a per-run CA and certificate,
  :mod:`fedcare.flower.tls`; ``FlowerConfig.insecure`` opts out, on loopback only; with
  ``FlowerConfig.node_auth`` it admits only SuperNodes whose public key was registered, one
  ``flwr supernode register`` per node; runtime dependency installation disabled: the machine
  may be offline),
* one ``flower-supernode`` per client, on its own free loopback port, whose node config names
  only that client's folder (``client-id``, ``data-path``) and nothing else; by default
  (``FlowerConfig.client_exec="warm"``) run through :mod:`fedcare.flower.supernode` (polls
  capped) with ``--isolation process`` and a :mod:`fedcare.flower.warm_exec` SuperExec beside
  it that forks each ClientApp task instead of starting a new interpreter. Both fast paths
  use Flower internals (:mod:`fedcare.flower.flwr_internals`): on a flwr version they were not
  verified on, :func:`stock_if_unverified` turns them off with one warning and the runner
  starts Flower's stock SuperNodes,
* ``flwr run <app> fedcare --stream``, which packages a one-file Flower App (a ``pyproject.toml``
  naming :mod:`fedcare.flower.server_app` and :mod:`fedcare.flower.client_app`) and submits it
  to the SuperLink's Control API. The SuperLink launches the ServerApp, which reads only the
  run plan (objectives, widths, configuration; no client rows) and writes ``w*`` and the round
  log to the run's result folder.

Every process gets its own session (process group), logs to ``<workdir>/logs/<name>.log``, a
private ``FLWR_HOME``, ``FLWR_TELEMETRY_ENABLED=0``, and an environment marker
(``FEDCARE_RUN_TOKEN``) that Flower's own children (SuperExec, ``flwr-serverapp``,
``flwr-clientapp``) inherit. Teardown, in a ``finally`` block that SIGINT and SIGTERM also reach
and that those signals cannot interrupt, stops the SuperNodes, then the SuperLink (SIGTERM to
each process group, SIGKILL after :attr:`FlowerConfig.shutdown_grace_s`), then sweeps every
process still carrying the marker. On Linux the started processes also receive SIGTERM if the
runner's process dies without cleaning up (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import tomli_w

from fedcare.flower.flower_options import FlowerConfig
from fedcare.flower.flwr_internals import fast_paths_enabled
from fedcare.flower.run_plan import CheckpointTarget
from fedcare.flower.run_watch import RunWatch, watch_run
from fedcare.flower.secagg import secure_plan
from fedcare.flower.server_app import PLAN_PATH_KEY
from fedcare.flower.site_node import SiteNode, supernode_program
from fedcare.flower.tls import RunSecurity
from fedcare.flower.workspace import (
    FLWR_CONNECTION,
    FlowerRunError,
    RoundTimer,
    Workspace,
    collect_result,
    flower_env,
    prepare_baseline_workspace,
    prepare_workspace,
    remove_workspace,
    write_flwr_home,
    write_private,
)
from fedcare.procs.children import ProcessSupervisor, executable, signals_blocked
from fedcare.procs.ports import free_port, port_open
from fedcare_core import algorithms
from fedcare_core.algorithms.union.features import UnionLayout
from fedcare_core.config import ExperimentConfig, ModelConfig, Stage1Config
from fedcare_core.data.client_store import FOLDER_MODE
from fedcare_core.data.clients import Federation
from fedcare_core.nn.training import ProgressFn
from fedcare_core.run.interrupts import signals_raise
from fedcare_core.stage1.loop import Stage1Result

#: How often the runner checks processes while waiting for them to start.
WATCH_INTERVAL_S = 0.2
#: SuperExec polling for new ClientApp/ServerApp tasks (Flower's default is 1 s). Each poll is
#: an HTTP request to the SuperNode: with K SuperExecs, shorter intervals cost more CPU than
#: they save in latency on two cores (measured in docs/BENCHMARKS.md).
_SUPEREXEC_POLL_S = "0.25"
#: How long ``flwr supernode register`` may take (an interpreter start and one request).
_REGISTER_TIMEOUT_S = 120.0
#: Slack added to the round/start-up timeouts before a run without progress counts as stuck.
_STALL_SLACK_S = 60.0


def stock_if_unverified(flower: FlowerConfig) -> FlowerConfig:
    """``flower`` with the SuperNode fast paths off where the installed flwr is unverified.

    The warm SuperExec and the capped polls only change speed; on a flwr version the seam was
    not verified on they are turned off together, with one warning, rather than patched into
    a Flower whose internals may have moved.
    """
    if flower.client_exec == "subprocess" and flower.node_poll_s is None:
        return flower  # the stock SuperNode was asked for: nothing to turn off
    if fast_paths_enabled(
        "warm SuperExec and capped SuperNode polls (flower-deployment)",
        "Flower's stock flower-supernode (a fresh flwr-clientapp per message, 3 s idle polls)",
    ):
        return flower
    return replace(flower, client_exec="subprocess", node_poll_s=None)


def write_app(root: Path, plan_path: Path, *, secure: bool = False) -> Path:
    """A one-file Flower App in ``root/app`` whose run config names the plan at ``plan_path``.

    The app is a ``pyproject.toml`` naming this package's ServerApp and ClientApp; with
    ``secure`` (``stage1.secagg``) the SecAgg+ ones (:mod:`fedcare.flower.secagg_server`).
    """
    app_dir = root / "app"
    app_dir.mkdir(exist_ok=True, mode=FOLDER_MODE)
    server, client = ("secagg_server", "secagg_client") if secure else ("server_app", "client_app")
    doc: dict[str, Any] = {
        "build-system": {"requires": ["hatchling"], "build-backend": "hatchling.build"},
        "project": {
            "name": "fedcare-stage1",
            "version": "1.0.0",
            "description": "FedCARE Stage 1 (apps from the installed fedcare.flower package)",
            "license": "Apache-2.0",
            "dependencies": [],
        },
        "tool": {
            "flwr": {
                "app": {
                    "publisher": "fedcare",
                    "components": {
                        "serverapp": f"fedcare.flower.{server}:app",
                        "clientapp": f"fedcare.flower.{client}:app",
                    },
                    "config": {PLAN_PATH_KEY: str(plan_path)},
                }
            }
        },
    }
    write_private(app_dir / "pyproject.toml", tomli_w.dumps(doc))
    return app_dir


def _site_node_of(ws: Workspace, security: RunSecurity, cid: int, superlink: str) -> SiteNode:
    """Client ``cid`` of a loopback run as a site: named by the run plan, data in memory."""
    keys = security.node_keys(cid) if security.node_auth else None
    return SiteNode(
        name=ws.plan.sites[cid] if ws.plan.sites else f"client-{cid}",
        data_path=ws.data_path(cid),
        superlink=superlink,
        root_certificates=None if security.tls is None else security.tls.ca_cert,
        private_key=None if keys is None else keys.private_key,
        runtime_tls=security.tls,
        node_port=free_port(),
        client_id=cid,
    )


class DeploymentStage1Runner:
    """A :data:`fedcare_core.run.pipeline.Stage1Runner` over SuperLink/SuperNode processes.

    Parameters
    ----------
    flower
        Timeouts, teardown settings and how SuperNodes run tasks (:attr:`flower` holds them as
        used: :func:`stock_if_unverified`).
    on_started
        Called with the runner once every process has been started (tests use it to reach
        :attr:`supervisor`, e.g. to kill a SuperNode).

    Attributes
    ----------
    supervisor
        The running processes (``superlink``, ``supernode-<k>``, ``flwr-run``) while a run is
        in progress; kept afterwards for inspection (every process is gone by then).
    ports
        The ports used by the last run (the SuperLink's first, on :attr:`link_host`; the
        SuperNodes' on loopback).
    timing
        Start-up and per-round wall times of the last run.
    """

    @property
    def federated_baselines(self) -> tuple[str, ...]:
        """Baselines whose rounds this runner runs, read when asked (one installed since counts)."""
        return algorithms.federated_baselines()

    def __init__(
        self,
        flower: FlowerConfig | None = None,
        on_started: Callable[[DeploymentStage1Runner], None] | None = None,
    ) -> None:
        self.flower = stock_if_unverified((flower or FlowerConfig()).validate())
        self.link_host = self.flower.bind_address
        self.on_started = on_started
        self.supervisor: ProcessSupervisor | None = None
        self.ports: list[int] = []
        self.timing: RoundTimer | None = None
        self.workspace: Workspace | None = None
        self.security: RunSecurity | None = None

    @property
    def in_memory(self) -> bool:
        """Client data in memory files, not on disk (files only for ``keep_workdir``)."""
        return not self.flower.keep_workdir

    def supernode_name(self, client_id: int) -> str:
        """Process name of client ``client_id``'s SuperNode."""
        return f"supernode-{client_id}"

    def supernode_command(self) -> list[str]:
        """The SuperNode program: stock ``flower-supernode`` or the poll-capped wrapper."""
        return supernode_program(self.flower.node_poll_s)

    def superexec_name(self, client_id: int) -> str:
        """Process name of client ``client_id``'s warm SuperExec (``client_exec="warm"``)."""
        return f"superexec-{client_id}"

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
        """Start the federation, run Stage 1 (kept in ``checkpoint``, if given), tear it down."""
        timer = RoundTimer(time.time())
        f, memory = self.flower, self.in_memory
        ws = prepare_workspace(
            federation,
            model_config,
            config,
            seed,
            f,
            in_memory=memory,
            checkpoint=checkpoint,
            named_sites=True,
        )
        return self._run(ws, timer, len(federation.clients), config.rounds, progress)

    def run_federated_baseline(
        self,
        algorithm: str,
        federation: Federation,
        layout: UnionLayout | None,
        config: ExperimentConfig,
        progress: ProgressFn | None,
    ) -> Stage1Result:
        """A baseline's rounds (:class:`fedcare_core.algorithms.base.BaselineBackend`)."""
        timer = RoundTimer(time.time())
        ws = prepare_baseline_workspace(
            algorithm, federation, layout, config, self.flower, in_memory=self.in_memory
        )
        k = len(federation.clients)
        return self._run(ws, timer, k, ws.plan.stage1.rounds, progress)

    def _run(
        self,
        ws: Workspace,
        timer: RoundTimer,
        k: int,
        rounds: int,
        progress: ProgressFn | None,
    ) -> Stage1Result:
        """Start the federation on the workspace's plan, wait, tear down, remove the folder."""
        self.timing = timer
        self.workspace = ws
        try:
            with signals_raise():
                try:
                    self._start(ws, k)
                    return self._wait(ws, rounds, progress)
                finally:
                    timer.finish(ws)
                    with signals_blocked():
                        self._teardown(k)
        finally:
            remove_workspace(ws, self.flower.keep_workdir)

    def _start(self, ws: Workspace, k: int) -> None:
        link_port = free_port(self.link_host)
        self.ports = [link_port]
        f = self.flower
        security = RunSecurity(
            ws.root / "credentials",
            insecure=f.insecure,
            node_auth=f.node_auth,
            bind_address=f.bind_address,
        )
        self.security = security
        sup = ProcessSupervisor(
            ws.logs_dir, self._env(ws, link_port, security), self.flower.shutdown_grace_s
        )
        self.supervisor = sup
        sup.start("superlink", self.superlink_command(security, link_port))
        self._wait_for_superlink(sup, link_port)
        if security.node_auth:
            _register_nodes(sup, {cid: security.node_keys(cid).public_key for cid in range(k)})
        for cid in range(k):
            self._start_node(ws, sup, security, cid, link_port)
        app = write_app(ws.root, ws.plan_path, secure=secure_plan(ws.plan))
        sup.start("flwr-run", [executable("flwr"), "run", str(app), FLWR_CONNECTION, "--stream"])
        if self.on_started is not None:
            self.on_started(self)

    def superlink_command(self, security: RunSecurity, link_port: int) -> list[str]:
        """``flower-superlink`` on :attr:`link_host` (loopback unless the user named another)."""
        return [
            executable("flower-superlink"), *security.superlink_args(),
            "--host", self.link_host, "--port", str(link_port),
            "--disable-runtime-dependency-installation",
        ]  # fmt: skip

    def _env(self, ws: Workspace, link_port: int, security: RunSecurity) -> dict[str, str]:
        """The environment of every process of the run."""
        address = f"{self.link_host}:{link_port}"
        home = write_flwr_home(ws.root / "flwr-home", address, security.connection())
        return flower_env(home) | {"FLWR_SUPEREXEC_TASK_POLL_INTERVAL": _SUPEREXEC_POLL_S}

    def _wait_for_superlink(self, sup: ProcessSupervisor, link_port: int) -> None:
        deadline = time.monotonic() + self.flower.process_start_timeout_s
        while not port_open(link_port, self.link_host):
            if not sup.alive("superlink"):
                raise FlowerRunError(
                    "flower-superlink exited at start-up:\n" + sup.log_tail("superlink")
                )
            if time.monotonic() > deadline:
                raise FlowerRunError(
                    f"flower-superlink did not listen on {self.link_host}:{link_port} within "
                    f"{self.flower.process_start_timeout_s:g} s"
                )
            time.sleep(WATCH_INTERVAL_S)

    def _start_node(
        self, ws: Workspace, sup: ProcessSupervisor, security: RunSecurity, cid: int, link: int
    ) -> None:
        """Client ``cid``'s node (:class:`~fedcare.flower.site_node.SiteNode`) on loopback."""
        warm = self.flower.client_exec == "warm"
        node = _site_node_of(ws, security, cid, f"{self.link_host}:{link}")
        self.ports.append(node.node_port)
        (ws.root / "nodes").mkdir(exist_ok=True, mode=FOLDER_MODE)
        config = write_private(ws.root / "nodes" / f"node-{cid}.toml", node.node_config())
        proc = sup.start(
            self.supernode_name(cid), node.supernode_argv(config, self.flower.node_poll_s, warm)
        )
        if warm:
            sup.start(self.superexec_name(cid), node.superexec_argv(proc.pid))

    def stall_limits(self) -> tuple[float, float]:
        """Seconds without a finished round before the run counts as stuck.

        The first round may take the processes' start, the handshake and one round; a later
        round one round timeout plus a handshake with reconnecting nodes, plus slack.
        """
        f = self.flower
        first = f.process_start_timeout_s + f.startup_timeout_s + f.round_timeout_s + _STALL_SLACK_S
        return first, 2 * f.round_timeout_s + _STALL_SLACK_S

    def _wait(self, ws: Workspace, total: int, progress: ProgressFn | None) -> Stage1Result:
        sup = self.supervisor
        assert sup is not None
        watch = RunWatch(
            result_dir=ws.result_dir,
            supervisor=sup,
            superlink_alive=lambda: sup.alive("superlink"),
            superlink_log=lambda: sup.log_tail("superlink"),
            stall_limits=self.stall_limits(),
            run_timeout_s=self.flower.run_timeout_s,
            logs_dir=ws.logs_dir,
        )
        watch_run(watch, total, progress)
        return collect_result(ws, "flower-deployment")

    def _teardown(self, k: int) -> None:
        if self.supervisor is None:
            return
        order = [self.supernode_name(c) for c in range(k)]
        if self.flower.client_exec == "warm":
            order += [self.superexec_name(c) for c in range(k)]
        order += ["flwr-run", "superlink"]
        self.supervisor.stop_all(order)


def _register_nodes(sup: ProcessSupervisor, public_keys: dict[int, Path]) -> None:
    """Register SuperNodes' public keys with the run's SuperLink (``flwr supernode register``).

    Flower 1.42's node authentication admits only SuperNodes whose public key the SuperLink's
    Control API was given beforehand; this is the documented CLI for it, over the run's TLS
    connection (``FLWR_HOME``'s ``config.toml``). The K commands run at once (each is mostly an
    interpreter start); every one must succeed.
    """
    procs = {
        cid: sup.start(
            f"register-{cid}",
            [executable("flwr"), "supernode", "register", str(key), FLWR_CONNECTION],
        )
        for cid, key in public_keys.items()
    }
    deadline = time.monotonic() + _REGISTER_TIMEOUT_S
    for cid, proc in procs.items():
        try:
            code: int | None = proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            code = None
        if code != 0:
            raise FlowerRunError(
                f"registering SuperNode {cid}'s public key failed:\n"
                + sup.log_tail(f"register-{cid}")
            )
