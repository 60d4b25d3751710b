"""The Flower backends' transport options: :class:`FlowerConfig`.

It holds what is about the transport, not the algorithm: timeouts, polling, Ray resources, how
a deployment SuperNode runs ClientApp tasks. What the ServerApp reads is
:class:`fedcare.flower.run_plan.RunPlan`; the algorithm's settings are ``fedcare_core.config``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from fedcare.procs.ports import LOOPBACK, free_port
from fedcare_core.config.fields import AT_LEAST_1, POSITIVE, Range, check_value, field_kinds
from fedcare_core.config.settings import SettingRef, declared, ranges_of, setting
from fedcare_core.errors import ConfigError

#: How a deployment SuperNode runs ClientApp tasks (see :attr:`FlowerConfig.client_exec`).
_CLIENT_EXECS = ("warm", "subprocess")
#: The longest time any wait may be given (30 days): longer ones overflow the clock's range in
#: ``time.sleep`` and thread waits (about 292 years; a typo's 1e300 s) after passing a
#: positivity check.
_MAX_TIMEOUT_S = 30 * 86_400.0
#: A time in seconds: positive and at most :data:`_MAX_TIMEOUT_S`.
SECONDS = Range(0, _MAX_TIMEOUT_S, low_open=True)
_FLOWER = "Flower backends (transport)"
#: The options about processes and sockets between parties (a deployment's): a backend
#: without a network (``BackendSpec.network``) refuses them.
_NETWORK_OPTIONS = ("insecure", "node_auth", "bind_address", "client_exec", "node_poll_s")


def takes_option(backend: Any, name: str) -> bool:
    """Whether registered backend ``backend`` (a ``BackendSpec``) takes Flower option ``name``.

    Every entry refuses an option the chosen backend would silently ignore: any with the
    in-process backend, a network one (:data:`_NETWORK_OPTIONS`) with one without sockets.
    """
    return backend.options is not None and (name not in _NETWORK_OPTIONS or backend.network)


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
    min_per_round, round_deadline_s
        Partial participation, k of n with a deadline (Algorithm 1's rounds): a round closes
        when every client replied, or once ``round_deadline_s`` has passed and at least k have
        (``min_per_round``, else a majority); a reply after that is discarded and noted. A
        round with fewer than ``min_per_round`` replies at the round timeout stops Stage 1.
        None: every client is waited for, up to the round timeout.
    bind_address
        Deployment: the IPv4 address of this machine the SuperLink listens on (and its
        certificate names); the local SuperNodes and ``flwr run`` dial it. Default loopback;
        another address needs TLS (refused with ``insecure``). The SuperNodes' runtime APIs
        stay on loopback whatever it is.
    """

    round_timeout_s: float = setting(
        600.0,
        help="Flower backends: seconds to wait for clients' replies in a round",
        range=SECONDS,
        flag="round-timeout",
        group=_FLOWER,
    )
    startup_timeout_s: float = setting(
        180.0,
        help="Flower backends: seconds to wait for all clients to join (flower-sim: at least 600)",
        range=SECONDS,
        flag="startup-timeout",
        group=_FLOWER,
    )
    pull_interval_s: float = setting(
        0.2, help="seconds between the server's polls for replies", range=SECONDS, group=_FLOWER
    )
    process_start_timeout_s: float = setting(
        60.0,
        help="deployment: seconds to wait for the SuperLink to accept connections",
        range=SECONDS,
        group=_FLOWER,
    )
    shutdown_grace_s: float = setting(
        5.0,
        help="deployment: seconds between SIGTERM and SIGKILL at teardown",
        range=SECONDS,
        group=_FLOWER,
    )
    run_timeout_s: float | None = setting(
        None,
        help="deployment: an upper bound on the whole Stage 1 run",
        range=SECONDS,
        group=_FLOWER,
    )
    sim_num_cpus: int | None = setting(
        None,
        help="simulation: CPUs of the private Ray instance (none: the machine's)",
        range=AT_LEAST_1,
        group=_FLOWER,
    )
    sim_client_cpus: float = setting(
        1.0, help="simulation: CPUs per ClientApp actor", range=POSITIVE, group=_FLOWER
    )
    keep_workdir: bool = setting(
        False,
        help="Flower backends: keep the run folder (logs, per-client data) for debugging",
        flag="keep-workdir",
        group=_FLOWER,
    )
    workdir_parent: str | None = setting(
        None, help="where the run folder is made (none: the temporary folder)", group=_FLOWER
    )
    client_exec: str = setting(
        "warm",
        help="deployment: how a SuperNode runs ClientApp tasks",
        choices=_CLIENT_EXECS,
        group=_FLOWER,
    )
    node_poll_s: float | None = setting(
        0.5,
        help="deployment: cap on the SuperNodes' polls (none: the stock flower-supernode)",
        range=SECONDS,
        group=_FLOWER,
    )
    insecure: bool = setting(
        False,
        help="flower-deployment: plain HTTP between the Flower processes instead of TLS with a "
        "per-run certificate authority (the default)",
        flag="insecure",
        group=_FLOWER,
    )
    node_auth: bool = setting(
        False,
        help="flower-deployment: SuperNode authentication; the SuperLink admits only nodes "
        "whose per-run public key was registered with it (needs TLS)",
        flag="node-auth",
        group=_FLOWER,
    )
    min_per_round: int | None = setting(
        None,
        help="Flower backends: partial participation, k of n: a round needs the replies of "
        "at least this many clients (fewer by the round timeout stop Stage 1), and once "
        "--round-deadline has passed it closes with them; none: no minimum",
        range=AT_LEAST_1,
        flag="min-clients-per-round",
        group=_FLOWER,
    )
    round_deadline_s: float | None = setting(
        None,
        help="Flower backends: seconds after which a round closes once --min-clients-per-round "
        "clients (default: a majority) replied; later replies are discarded and noted",
        range=SECONDS,
        flag="round-deadline",
        group=_FLOWER,
    )
    bind_address: str = setting(
        LOOPBACK,
        help="flower-deployment: the IPv4 address of this machine the SuperLink listens on "
        "and its certificate names (another than loopback needs TLS)",
        flag="bind-address",
        metavar="IP",
        group=_FLOWER,
    )

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
            What a message calls each field (e.g. :func:`cli_flags`); the field's own name
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

        ranges = ranges_of(type(self))
        for field, kind in field_kinds(type(self)).items():
            check_value(name(field), getattr(self, field), kind, ranges.get(field))
        if self.client_exec not in _CLIENT_EXECS:
            raise ConfigError(
                f"{name('client_exec')} must be one of {', '.join(_CLIENT_EXECS)}, "
                f"got {self.client_exec!r}"
            )
        self._check_quorum(name)
        ip = _check_bind_address(self.bind_address, name("bind_address"))
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

    def _check_quorum(self, name: Callable[[str], str]) -> None:
        """A round's deadline lies within its timeout."""
        deadline = self.round_deadline_s
        if deadline is not None and deadline > self.round_timeout_s:
            raise ConfigError(
                f"{name('round_deadline_s')} {deadline:g} s is beyond {name('round_timeout_s')} "
                f"{self.round_timeout_s:g} s: a round would time out before its deadline"
            )


def check_quorum_for(
    quorum: tuple[int | None, float | None],
    clients: int,
    own_strategy: str | None,
    secagg: bool,
    names: tuple[str, str],
) -> None:
    """Refuse partial participation that a run cannot honour.

    Parameters
    ----------
    quorum
        k (``min_per_round``) and the deadline (``round_deadline_s``); (None, None): off.
    clients
        The run's clients (sites): k may not exceed them.
    own_strategy
        The Flower strategy an algorithm runs its rounds with (FedAvg, FedXgbBagging; None:
        Algorithm 1's rounds, the only ones partial participation is for).
    secagg
        SecAgg+ decides a round by its own threshold: refused with it.
    names
        How messages name k and the deadline (the flags).

    Raises
    ------
    ConfigError
        Naming the option and the reason.
    """
    k, deadline = quorum
    if k is None and deadline is None:
        return
    name = names[0] if k is not None else names[1]
    if k is not None and k > clients:
        raise ConfigError(f"{names[0]} {k}: more than the run's {clients} participants")
    if own_strategy is not None:
        from fedcare_core.algorithms import algorithm_names, get_algorithm

        stage1 = [n for n in algorithm_names() if get_algorithm(n).federated_rounds == "stage1"]
        raise ConfigError(
            f"{name}: partial participation is for Algorithm 1's rounds ({', '.join(stage1)}), "
            f"not rounds run by Flower's {own_strategy}"
        )
    if secagg:
        raise ConfigError(f"{name} with secagg: SecAgg+ decides a round by its own threshold")


def majority(clients: int) -> int:
    """A strict majority of ``clients``: k when only a deadline is given."""
    return clients // 2 + 1


def _check_bind_address(address: str, name: str = "bind_address") -> ipaddress.IPv4Address:
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


def flagged_options() -> list[SettingRef]:
    """The Flower options ``fedcare run`` offers as flags (``--round-timeout``, …)."""
    return [ref for ref in declared(FlowerConfig, "flower") if ref.spec.flag is not None]


def cli_flags() -> dict[str, str]:
    """The ``fedcare run`` flag of each option that has one (what the CLI's messages name)."""
    return {ref.name: f"--{ref.spec.flag}" for ref in flagged_options()}
