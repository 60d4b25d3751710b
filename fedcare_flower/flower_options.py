"""The Flower backends' transport options: :class:`FlowerConfig`.

It holds what is about the transport, not the algorithm: timeouts, polling, Ray resources, how
a deployment SuperNode runs ClientApp tasks. What the ServerApp reads is
:class:`fedcare_flower.run_plan.RunPlan`; the algorithm's settings are ``fedcare_core.config``.
"""

from __future__ import annotations

from dataclasses import dataclass

from fedcare_core.errors import ConfigError

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
    insecure
        Deployment: plain HTTP between the processes (the explicit opt-out). By default every
        connection is TLS with a per-run CA and certificate (:mod:`fedcare_flower.tls`).
    node_auth
        Deployment: SuperNode authentication (Flower's node keys): the SuperLink admits only
        nodes whose per-run public key was registered with it. Needs TLS.
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
    insecure: bool = False
    node_auth: bool = False

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
        if self.insecure and self.node_auth:
            raise ConfigError("node_auth needs TLS: it cannot be combined with insecure")
        return self
