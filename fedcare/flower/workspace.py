"""A Flower run's working folder (the plan, results and logs) and its clients' data.

Layout (every folder created 0700 and every file this process writes 0600)::

    <root>/clients/client-<k>/   one folder per client (fedcare_core.data.client_store),
                                 only when the data goes through files (see below)
    <root>/plan.json             the server's RunPlan (no client data)
    <root>/result/               what the ServerApp writes (fedcare.flower.results)
    <root>/logs/                 deployment: one log per process

With ``in_memory`` (flower-deployment unless ``--keep-workdir``) no client data is written to
any file system: each client's data is one anonymous memory file (``memfd_create``, mode
0600) held open by this process only, and its node is told the path
``/proc/<this pid>/fd/<n>`` (:attr:`Workspace.data_paths`), which opens it only while this
process lives. When this process dies, even by SIGKILL, the kernel closes its descriptors and
the memory is freed: there is no file to leave behind. Otherwise (simulation, kept folders)
the data goes into ``clients/``.

The folder is deleted when the run ends unless :attr:`FlowerConfig.keep_workdir` is set; a
kept folder that holds client data says so in one line on stderr.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import tomli_w

from fedcare.flower.client_app import client_folder_name
from fedcare.flower.flower_options import FlowerConfig
from fedcare.flower.results import read_error, read_rounds, read_stage1_result, result_ready
from fedcare.flower.run_plan import PLAN_FILE, CheckpointTarget, RunPlan
from fedcare_core.algorithms.union.features import UnionLayout
from fedcare_core.config import BaselineConfig, ExperimentConfig, ModelConfig, Stage1Config
from fedcare_core.data.client_store import (
    FILE_MODE,
    FOLDER_MODE,
    client_data_bytes,
    save_client_data,
)
from fedcare_core.data.clients import ClientData, Federation
from fedcare_core.errors import ConfigError, FedcareError
from fedcare_core.stage1.loop import Stage1Result

#: Environment every Flower process of a run gets (no network calls from an offline machine).
FLOWER_ENV = {"FLWR_TELEMETRY_ENABLED": "0", "FLWR_DISABLE_UPDATE_CHECK": "1"}


class FlowerRunError(FedcareError):
    """A federated Stage 1 run failed (the message says where to look)."""


@dataclass(frozen=True)
class Workspace:
    """Paths of one run's working folder."""

    root: Path
    plan: RunPlan
    #: What each client's node loads, by client id: ``/proc/<pid>/fd/<n>`` of an anonymous
    #: memory file, or empty when the data is in :meth:`client_dir` folders.
    data_paths: tuple[str, ...] = ()
    #: The memory files' descriptors (closed by :func:`remove_workspace`).
    memory_fds: tuple[int, ...] = ()

    @property
    def clients_dir(self) -> Path:
        """Parent of the per-client folders."""
        return self.root / "clients"

    def client_dir(self, client_id: int) -> Path:
        """Client ``client_id``'s data folder."""
        return self.clients_dir / client_folder_name(client_id)

    def data_path(self, client_id: int) -> str:
        """Where client ``client_id``'s node loads its data (a memory file or its folder)."""
        if self.data_paths:
            return self.data_paths[client_id]
        return str(self.client_dir(client_id))

    @property
    def holds_client_files(self) -> bool:
        """Whether client data lies in files under :attr:`root` (not in memory files)."""
        return self.clients_dir.exists()

    @property
    def plan_path(self) -> Path:
        """The plan file."""
        return self.root / PLAN_FILE

    @property
    def result_dir(self) -> Path:
        """The ServerApp's output folder."""
        return Path(self.plan.result_dir)

    @property
    def logs_dir(self) -> Path:
        """Process logs (deployment)."""
        return self.root / "logs"


def _package_root() -> Path:
    """The folder holding ``fedcare_core`` and ``fedcare`` (for child PYTHONPATHs)."""
    return Path(__file__).resolve().parents[2]


def child_pythonpath() -> str:
    """PYTHONPATH for processes that must import this project (Ray workers, Flower apps)."""
    parts = [str(_package_root())]
    if os.environ.get("PYTHONPATH"):
        parts.append(os.environ["PYTHONPATH"])
    return os.pathsep.join(parts)


def flower_env(flwr_home: Path) -> dict[str, str]:
    """The environment of a FedCARE Flower process (SuperLink, SuperNode, SuperExec, ``flwr``).

    This project on ``PYTHONPATH``, this environment's scripts first on ``PATH``, a private
    ``FLWR_HOME``, telemetry and update checks off, and one intra-op thread per process: the
    ClientApps and the server compute as the in-process run does (the results are the same to
    the bit), and K processes on one machine do not oversubscribe its cores.
    """
    env = dict(os.environ)
    env.update(FLOWER_ENV)
    env.update(
        {
            "PYTHONPATH": child_pythonpath(),
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
            "FLWR_HOME": str(flwr_home),
            "PYTHONUNBUFFERED": "1",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
        }
    )
    env.pop("RAY_ADDRESS", None)
    return env


#: The ``flwr`` CLI's name for the SuperLink of a run or a coordinator (its ``config.toml``).
FLWR_CONNECTION = "fedcare"


def write_flwr_home(
    home: Path, address: str, security: Mapping[str, str | bool] | None = None
) -> Path:
    """A private ``FLWR_HOME`` whose ``config.toml`` names the SuperLink at ``address``.

    ``security`` holds the connection's TLS keys (the CA as ``root-certificates``, or
    ``insecure = true``; None: insecure).
    """
    home.mkdir(parents=True, exist_ok=True, mode=FOLDER_MODE)
    os.chmod(home, FOLDER_MODE)
    connection: dict[str, str | bool] = {"address": address}
    connection.update(security or {"insecure": True})
    doc = {"superlink": {"default": FLWR_CONNECTION, FLWR_CONNECTION: connection}}
    write_private(home / "config.toml", tomli_w.dumps(doc))
    return home


def prepare_workspace(
    federation: Federation,
    model_config: ModelConfig,
    stage1_config: Stage1Config,
    seed: int,
    flower: FlowerConfig,
    *,
    algorithm: str = "fedcare",
    baselines: BaselineConfig | None = None,
    union: UnionLayout | None = None,
    threads: int = 1,
    in_memory: bool = False,
    checkpoint: CheckpointTarget | None = None,
    named_sites: bool = False,
) -> Workspace:
    """Create the working folder and the server's plan, and hand over each client's data.

    Each client's data (its own encoded features as prepared) goes into a folder of its own,
    or, with ``in_memory`` where the platform has ``memfd_create`` (Linux), into an anonymous
    memory file of its own that no file system holds (:func:`memory_handover`). With ``union`` (a
    baseline's FullMLP input) the plan carries the union layout, the model's input width is
    the union width, and each client embeds its features itself. With ``checkpoint`` the
    server keeps (and resumes from) a Stage 1 checkpoint there. With ``named_sites`` (the
    loopback deployment: the machinery of a federation of sites) client ``k`` is the site
    ``client-<k>`` of the plan and receives ``w*`` at the end.

    Raises
    ------
    ConfigError
        If the clients are not numbered 0..K-1 (the simulation maps node index to client).
    """
    ids = [c.client_id for c in federation.clients]
    if ids != list(range(len(ids))):
        raise ConfigError(f"clients must be numbered 0..K-1 in order, got {ids}")
    # mkdtemp creates the folder 0700 itself; its sub-folders are created 0700 too.
    root = Path(tempfile.mkdtemp(prefix="fedcare-flwr-", dir=flower.workdir_parent))
    result_dir = root / "result"
    result_dir.mkdir(mode=FOLDER_MODE)
    (root / "logs").mkdir(mode=FOLDER_MODE)
    plan = RunPlan(
        objectives=tuple((o.name, o.kind) for o in federation.objectives),
        common_width=federation.common_width if union is None else union.width,
        model=model_config,
        stage1=stage1_config,
        seed=seed,
        num_clients=len(federation.clients),
        result_dir=str(result_dir),
        round_timeout_s=flower.round_timeout_s,
        startup_timeout_s=flower.startup_timeout_s,
        pull_interval_s=flower.pull_interval_s,
        min_per_round=flower.min_per_round,
        round_deadline_s=flower.round_deadline_s,
        algorithm=algorithm,
        baselines=baselines,
        union_common_width=None if union is None else union.common_width,
        union_columns=() if union is None else union.columns,
        threads=threads,
        checkpoint_path=None if checkpoint is None else checkpoint.path,
        checkpoint_fingerprint=None if checkpoint is None else checkpoint.fingerprint,
        sites=tuple(f"client-{k}" for k in ids) if named_sites else (),
        broadcast=named_sites,
        holders=tuple(
            (o.name, tuple(c.client_id for c in federation.clients if o.name in c.objectives))
            for o in federation.objectives
        ),
    )
    ws = Workspace(root, plan)
    try:
        write_private(ws.plan_path, plan.to_json() + "\n")
        if in_memory and hasattr(os, "memfd_create"):
            paths, fds = memory_handover(federation.clients)
            return Workspace(root, plan, paths, fds)
        for client in federation.clients:
            save_client_data(client, ws.client_dir(client.client_id))
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return ws


def memory_handover(clients: Sequence[ClientData]) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """Each client's data in an anonymous memory file of its own; the paths that open them.

    The files (``memfd_create``, close-on-exec, mode 0600) have no name in any file system:
    the only way in is ``/proc/<this pid>/fd/<n>``, for processes of the same user, while
    this process lives. No child inherits the descriptors; a node process opens the path,
    reads the data and closes it. When this process exits, however it exits, the kernel
    closes the descriptors and frees the memory.

    Returns
    -------
    tuple
        The paths (by client id) and the descriptors (closed by :func:`_close_memory_files`).
    """
    paths: list[str] = []
    fds: list[int] = []
    try:
        for client in clients:
            fd = os.memfd_create(f"fedcare-client-{client.client_id}", os.MFD_CLOEXEC)
            fds.append(fd)
            # A memory file starts 0777 but has no name anyone could open it by before this.
            os.fchmod(fd, FILE_MODE)
            data = memoryview(client_data_bytes(client))
            while data:
                data = data[os.write(fd, data) :]
            paths.append(f"/proc/{os.getpid()}/fd/{fd}")
    except BaseException:
        _close_memory_files(fds)
        raise
    return tuple(paths), tuple(fds)


def _close_memory_files(fds: tuple[int, ...] | list[int]) -> None:
    """Close memory files of :func:`memory_handover` (their memory is freed with the last)."""
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def write_private(path: Path, text: str) -> Path:
    """Write ``text`` to a file created owner-only (0600) from the start."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, FILE_MODE)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    return path


def prepare_baseline_workspace(
    algorithm: str,
    federation: Federation,
    layout: UnionLayout | None,
    config: ExperimentConfig,
    flower: FlowerConfig,
    *,
    in_memory: bool = False,
) -> Workspace:
    """The working folder of a baseline's federated rounds (FedAvg, FedProx, FMGDA, FSMGDA).

    FMGDA and FSMGDA are Algorithm 1 on the union vectors with their Stage 1 settings
    (:func:`fedcare_core.algorithms.fmgda.rounds.mgda_config`: FMGDA's batch covers every client's
    training rows); FedAvg and FedProx take their local training from ``config.baselines``
    and T from ``config.stage1.rounds``.

    Raises
    ------
    ConfigError
        For an algorithm no Flower strategy here runs.
    """
    from fedcare_core.algorithms import federated_baselines, get_algorithm

    if algorithm not in federated_baselines():
        raise ConfigError(f"no Flower run for baseline {algorithm!r}")
    stage1 = get_algorithm(algorithm).flower_stage1(config.stage1, federation)
    return prepare_workspace(
        federation,
        config.model,
        stage1,
        config.seed,
        flower,
        algorithm=algorithm,
        baselines=config.baselines,
        union=layout,
        threads=config.threads,
        in_memory=in_memory,
    )


def remove_workspace(ws: Workspace, keep: bool) -> None:
    """Free the memory files; delete the working folder (client data included) unless ``keep``.

    A kept folder holding client files says so, where, and that it is owner-only, on stderr.
    """
    _close_memory_files(ws.memory_fds)
    if not keep:
        shutil.rmtree(ws.root, ignore_errors=True)
    elif ws.holds_client_files:
        print(
            f"fedcare: kept {ws.root}: it holds patient-level client data in {ws.clients_dir} "
            "(owner-only: folders 0700, files 0600); delete it when done",
            file=sys.stderr,
        )


def collect_result(ws: Workspace, where: str) -> Stage1Result:
    """Read the finished result, or raise :class:`FlowerRunError` with the server's error."""
    if result_ready(ws.result_dir):
        return read_stage1_result(ws.result_dir, ws.plan)
    error = read_error(ws.result_dir)
    detail = f":\n{error.strip().splitlines()[-1]}" if error else ""
    raise FlowerRunError(f"Stage 1 over Flower ({where}) produced no result{detail}")


@dataclass
class RoundTimer:
    """Per-round timing of a run, from the ServerApp's round log.

    ``startup_s`` runs from the runner's start to the end of the handshake (approximated by
    the first round's finish minus its wall time); ``round_s`` are the rounds' wall times.
    """

    started_at: float
    startup_s: float = float("nan")
    total_s: float = float("nan")
    round_s: tuple[float, ...] = ()

    def finish(self, ws: Workspace) -> None:
        """Fill in the timings from the round log."""
        rounds = read_rounds(ws.result_dir)
        self.total_s = time.time() - self.started_at
        self.round_s = tuple(float(r["wall_s"]) for r in rounds)
        if rounds:
            first = rounds[0]
            self.startup_s = float(first["finished_at"]) - float(first["wall_s"]) - self.started_at
