"""The Flower backends' transport options: :class:`FlowerConfig`.

It holds what is about the transport, not the algorithm: timeouts, polling, Ray resources, how
a deployment SuperNode runs ClientApp tasks. What the ServerApp reads is
:class:`fedcare.flower.run_plan.RunPlan`; the algorithm's settings are ``fedcare_core.config``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fedcare.procs import LOOPBACK, free_port
from fedcare_core.config.fields import AT_LEAST_1, POSITIVE, Range, check_value, field_kinds
from fedcare_core.errors import ConfigError

#: How a deployment SuperNode runs ClientApp tasks (see :attr:`FlowerConfig.client_exec`).
CLIENT_EXECS = ("warm", "subprocess")
#: The longest time any wait may be given (30 days): longer ones overflow the clock's range in
#: ``time.sleep`` and thread waits (about 292 years; a typo's 1e300 s) after passing a
#: positivity check.
MAX_TIMEOUT_S = 30 * 86_400.0
#: A time in seconds: positive and at most :data:`MAX_TIMEOUT_S`.
SECONDS = Range(0, MAX_TIMEOUT_S, low_open=True)
#: Every number field's range (NaN and ±inf are refused for every float field).
RANGES: dict[str, Range] = {
    "round_timeout_s": SECONDS,
    "startup_timeout_s": SECONDS,
    "pull_interval_s": SECONDS,
    "process_start_timeout_s": SECONDS,
    "shutdown_grace_s": SECONDS,
    "run_timeout_s": SECONDS,
    "sim_num_cpus": AT_LEAST_1,
    "sim_client_cpus": POSITIVE,
    "node_poll_s": SECONDS,
}
#: The ``fedcare run`` flag of each field that has one (what the CLI's messages name).
CLI_FLAGS: dict[str, str] = {
    "round_timeout_s": "--round-timeout",
    "startup_timeout_s": "--startup-timeout",
    "keep_workdir": "--keep-workdir",
    "insecure": "--insecure",
    "node_auth": "--node-auth",
    "bind_address": "--bind-address",
}


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
        SuperNode runs with ``--isolation process`` beside a :mod:`fedcare.flower.warm_exec`
        SuperExec that forks each task from a process that has already imported flwr and torch.
        ``"subprocess"``: Flower's stock behaviour, a fresh ``flwr-clientapp`` interpreter per
        task (several CPU-seconds of imports per client per round).
    node_poll_s
        Deployment: cap on the SuperNodes' idle and reply polls (see
        :mod:`fedcare.flower.supernode`; Flower's own loop waits 3 s after every empty pull).
        None: the stock ``flower-supernode``.
    insecure
        Deployment: plain HTTP between the processes (the explicit opt-out). By default every
        connection is TLS with a per-run CA and certificate (:mod:`fedcare.flower.tls`).
    node_auth
        Deployment: SuperNode authentication (Flower's node keys): the SuperLink admits only
        nodes whose per-run public key was registered with it. Needs TLS.
    bind_address
        Deployment: the IPv4 address of this machine the SuperLink listens on (and its
        certificate names); the local SuperNodes and ``flwr run`` dial it. Default loopback;
        another address needs TLS (refused with ``insecure``). The SuperNodes' runtime APIs
        stay on loopback whatever it is.
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
    bind_address: str = LOOPBACK

    @classmethod
    def from_options(
        cls, options: Mapping[str, Any], names: Mapping[str, str] | None = None
    ) -> FlowerConfig:
        """A validated configuration from a mapping (a Prefect parameter, JSON).

        ``names``: what messages call each field (as :meth:`validate`).

        Raises
        ------
        ConfigError
            An unknown key, or a value :meth:`validate` refuses.
        """
        unknown = sorted(str(k) for k in options if k not in field_kinds(cls))
        if unknown:
            raise ConfigError(f"unknown Flower option(s): {unknown}")
        return cls(**options).validate(names)

    def validate(self, names: Mapping[str, str] | None = None) -> FlowerConfig:
        """Check every field's type and range, and the combinations; return ``self``.

        Parameters
        ----------
        names
            What a message calls each field (e.g. :data:`CLI_FLAGS`); the field's own name
            otherwise.

        Raises
        ------
        ConfigError
            Naming the first field at fault: a wrong type, a non-finite or non-positive time,
            an unknown ``client_exec``, a bind address that is not one IPv4 address, or
            ``insecure`` with ``node_auth`` or with a non-loopback bind address.
        """
        names = names or {}

        def name(field: str) -> str:
            return names.get(field, field)

        for field, kind in field_kinds(type(self)).items():
            check_value(name(field), getattr(self, field), kind, RANGES.get(field))
        if self.client_exec not in CLIENT_EXECS:
            raise ConfigError(
                f"{name('client_exec')} must be one of {', '.join(CLIENT_EXECS)}, "
                f"got {self.client_exec!r}"
            )
        ip = check_bind_address(self.bind_address, name("bind_address"))
        if self.insecure and self.node_auth:
            raise ConfigError(
                f"{name('node_auth')} needs TLS: it cannot be combined with {name('insecure')}"
            )
        if self.insecure and not ip.is_loopback:
            raise ConfigError(
                f"{name('bind_address')} {ip} is not loopback: the federation's traffic would "
                f"leave this machine unencrypted; drop {name('insecure')}"
            )
        if not ip.is_loopback:
            try:  # a socket bound on port 0 and closed: nothing listens
                free_port(str(ip))
            except OSError as exc:
                raise ConfigError(
                    f"{name('bind_address')} {ip}: cannot listen there ({exc.strerror})"
                ) from None
        return self


def check_bind_address(address: str, name: str = "bind_address") -> ipaddress.IPv4Address:
    """``address`` as one IPv4 address (not the any-address ``0.0.0.0``), else refuse.

    Raises
    ------
    ConfigError
        Naming ``name``: not an IPv4 address, the unspecified address, or a multicast one.
    """
    try:
        ip = ipaddress.IPv4Address(address)
    except ValueError:
        raise ConfigError(
            f"{name} must be an IPv4 address of this machine, got {address!r}"
        ) from None
    if ip.is_unspecified or ip.is_multicast:
        raise ConfigError(
            f"{name} must name one address of this machine, got {address} (the run's "
            "certificate names the address clients dial; 0.0.0.0 would listen everywhere)"
        )
    return ip
