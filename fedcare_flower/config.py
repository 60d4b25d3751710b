"""Settings of the Flower backends and the run plan the ServerApp reads.

:class:`FlowerConfig` holds what is about the transport, not the algorithm: timeouts, polling,
Ray resources. :class:`RunPlan` is everything the server side needs to run Stage 1 and nothing
about any client's rows: objective names and kinds, the common feature width, the model and
Stage 1 configuration, the seed, the number of clients to wait for, and where to write results.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from fedcare_core.config import BaselineConfig, ModelConfig, Stage1Config
from fedcare_core.errors import ConfigError

#: File names inside a run's result folder.
PLAN_FILE = "plan.json"
ROUNDS_FILE = "rounds.jsonl"
RESULT_ARRAYS_FILE = "stage1.npz"
RESULT_FILE = "stage1.json"
ERROR_FILE = "error.txt"


#: How a deployment SuperNode runs ClientApp tasks (see :attr:`FlowerConfig.client_exec`).
CLIENT_EXECS = ("warm", "subprocess")


@dataclass(frozen=True)
class FlowerConfig:
    """Transport settings of the Flower backends (all times in seconds).

    Parameters
    ----------
    round_timeout_s
        How long the server waits for replies in a round. A client that has not replied by
        then is recorded as missing from that round and asked again in the next; a client whose
        SuperNode the SuperLink reports offline is dropped from the run.
    startup_timeout_s
        How long the server waits for all K clients to connect and identify themselves; Stage 1
        starts with those present when it expires (at least one is required).
    pull_interval_s
        How often the server polls for replies while waiting.
    process_start_timeout_s
        Deployment: how long to wait for the SuperLink to accept connections.
    shutdown_grace_s
        Deployment: how long processes get between SIGTERM and SIGKILL at teardown.
    run_timeout_s
        Deployment: an upper bound on the whole Stage 1 run (None: none beyond the rounds'
        own timeouts).
    sim_num_cpus
        Simulation: CPUs given to the private Ray instance (None: all of the machine's).
    sim_client_cpus
        Simulation: CPUs reserved per ClientApp actor (so ``sim_num_cpus / sim_client_cpus``
        clients train at once).
    keep_workdir
        Keep the run's working folder (logs, plan, per-client files) instead of deleting it.
        Per-client files are patient data: keep them only for debugging.
    workdir_parent
        Where the working folder is created (None: the system temporary folder).
    client_exec
        Deployment: how a SuperNode runs each ClientApp task. ``"warm"`` (default): the
        SuperNode runs with ``--isolation process`` beside a :mod:`fedcare_flower.warm_exec`
        SuperExec that forks each task from a process that has already imported flwr and torch.
        ``"subprocess"``: Flower's stock behaviour, a fresh ``flwr-clientapp`` interpreter per
        task (several CPU-seconds of imports per client per round).
    node_poll_s
        Deployment: cap on the SuperNodes' idle and reply polls (see
        :mod:`fedcare_flower.supernode`; Flower's own loop waits 3 s after every empty pull).
        None: the stock ``flower-supernode``.
    """

    round_timeout_s: float = 600.0
    startup_timeout_s: float = 180.0
    pull_interval_s: float = 0.2
    process_start_timeout_s: float = 60.0
    shutdown_grace_s: float = 5.0
    run_timeout_s: float | None = None
    sim_num_cpus: int | None = None
    sim_client_cpus: float = 1.0
    keep_workdir: bool = False
    workdir_parent: str | None = None
    client_exec: str = "warm"
    node_poll_s: float | None = 0.5

    def validate(self) -> FlowerConfig:
        """Raise :class:`ConfigError` on a non-positive time or resource; return ``self``."""
        for name in (
            "round_timeout_s",
            "startup_timeout_s",
            "pull_interval_s",
            "process_start_timeout_s",
            "shutdown_grace_s",
            "sim_client_cpus",
        ):
            if not getattr(self, name) > 0:
                raise ConfigError(f"{name} must be > 0, got {getattr(self, name)}")
        if self.run_timeout_s is not None and not self.run_timeout_s > 0:
            raise ConfigError(f"run_timeout_s must be > 0, got {self.run_timeout_s}")
        if self.node_poll_s is not None and not self.node_poll_s > 0:
            raise ConfigError(f"node_poll_s must be > 0 or None, got {self.node_poll_s}")
        if self.client_exec not in CLIENT_EXECS:
            raise ConfigError(
                f"client_exec must be one of {', '.join(CLIENT_EXECS)}, got {self.client_exec!r}"
            )
        if self.sim_num_cpus is not None and self.sim_num_cpus < 1:
            raise ConfigError(f"sim_num_cpus must be ≥ 1, got {self.sim_num_cpus}")
        return self


@dataclass(frozen=True)
class RunPlan:
    """What the server needs to run Stage 1 (no client data).

    Parameters
    ----------
    objectives
        ``(name, kind)`` of every objective of the federation, in the model's head order.
    common_width
        Encoded width of the common features (the backbone's input).
    model, stage1
        Architecture and Stage 1 hyper-parameters.
    seed
        Experiment seed (``w^0`` and every client's random streams).
    num_clients
        K: how many clients the server waits for.
    result_dir
        Folder the server writes its per-round log and the final model to.
    round_timeout_s, startup_timeout_s, pull_interval_s
        See :class:`FlowerConfig`.
    algorithm
        ``"fedcare"`` (Algorithm 1: FedCARE, FedCARE-B, FMGDA, FSMGDA) or a baseline run by
        Flower's own strategies (``"fedavg"``, ``"fedprox"``; :mod:`fedcare_flower.baselines`).
    baselines
        The baselines' settings (FedAvg/FedProx local training, FedProx's μ).
    union_common_width, union_columns
        A baseline's union layout (:class:`~fedcare_core.baselines.features.UnionLayout`):
        column names, no rows. Each client embeds its own features into it; ``common_width``
        is then the union width. None: the clients' common features as they are.
    threads
        Torch intra-op threads of a baseline's ClientApp (``ExperimentConfig.threads``).
    """

    objectives: tuple[tuple[str, str], ...]
    common_width: int
    model: ModelConfig
    stage1: Stage1Config
    seed: int
    num_clients: int
    result_dir: str
    round_timeout_s: float = 600.0
    startup_timeout_s: float = 180.0
    pull_interval_s: float = 0.2
    algorithm: str = "fedcare"
    baselines: BaselineConfig | None = None
    union_common_width: int | None = None
    union_columns: tuple[str, ...] = ()
    threads: int = 1

    @property
    def objective_names(self) -> tuple[str, ...]:
        """Objective names in head order."""
        return tuple(n for n, _ in self.objectives)

    @property
    def kinds(self) -> dict[str, str]:
        """Objective name → kind."""
        return dict(self.objectives)

    def to_json(self) -> str:
        """Serialise as JSON."""
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> RunPlan:
        """Parse :meth:`to_json`'s output."""
        raw: dict[str, Any] = json.loads(text)
        model = dict(raw.pop("model"))
        model["head_hidden"] = tuple(model["head_hidden"])
        baselines = raw.pop("baselines", None)
        return cls(
            objectives=tuple((str(n), str(k)) for n, k in raw.pop("objectives")),
            model=ModelConfig(**model),
            stage1=Stage1Config(**raw.pop("stage1")),
            baselines=None if baselines is None else BaselineConfig(**baselines),
            union_columns=tuple(str(c) for c in raw.pop("union_columns", ())),
            **raw,
        )

    def write(self, path: str | Path) -> Path:
        """Write the plan to ``path``."""
        p = Path(path)
        p.write_text(self.to_json() + "\n")
        return p

    @classmethod
    def read(cls, path: str | Path) -> RunPlan:
        """Read a plan written by :meth:`write`."""
        return cls.from_json(Path(path).read_text())
