"""FlowerConfig's checks: every field's type and range, the combinations, the bind address."""

from __future__ import annotations

import psutil
import pytest

from fedcare.flower.flower_options import FlowerConfig, cli_flags
from fedcare_core.errors import ConfigError

#: (field, a value it refuses, words the message holds).
BAD_FIELDS = [
    ("round_timeout_s", float("nan"), "finite"),
    ("round_timeout_s", float("inf"), "finite"),
    ("round_timeout_s", -1.0, "lie in (0, 2,592,000]"),
    ("round_timeout_s", 0, "lie in (0, 2,592,000]"),
    ("round_timeout_s", 1e300, "lie in (0, 2,592,000], got 1e+300"),  # time_t overflow
    ("round_timeout_s", "600", "a number"),
    ("round_timeout_s", True, "a number"),
    ("startup_timeout_s", float("-inf"), "finite"),
    ("pull_interval_s", 0.0, "lie in (0, 2,592,000]"),
    ("process_start_timeout_s", None, "null"),
    ("shutdown_grace_s", float("nan"), "finite"),
    ("run_timeout_s", float("inf"), "finite"),
    ("run_timeout_s", -1, "lie in (0, 2,592,000]"),
    ("startup_timeout_s", 10**18, "lie in (0, 2,592,000]"),
    ("sim_num_cpus", 0, "≥ 1"),
    ("sim_num_cpus", 2.0, "an integer"),
    ("sim_client_cpus", float("nan"), "finite"),
    ("keep_workdir", "yes", "true or false"),
    ("workdir_parent", 3, "a string"),
    ("client_exec", "thread", "warm, subprocess"),
    ("node_poll_s", 0, "lie in (0, 2,592,000]"),
    ("insecure", 1, "true or false"),
    ("node_auth", None, "null"),
    ("bind_address", "localhost", "IPv4"),
    ("bind_address", "::1", "IPv4"),
    ("bind_address", "0.0.0.0", "one address"),
    ("bind_address", "224.0.0.1", "one address"),
]


@pytest.mark.parametrize(("field", "value", "words"), BAD_FIELDS)
def test_a_bad_field_is_refused_naming_it(field: str, value: object, words: str) -> None:
    with pytest.raises(ConfigError, match=field) as caught:
        FlowerConfig(**{field: value}).validate()  # type: ignore[arg-type]
    assert words in str(caught.value)


def test_messages_name_the_cli_flag_when_asked() -> None:
    with pytest.raises(ConfigError, match=r"^--round-timeout must be a finite number, got inf$"):
        FlowerConfig(round_timeout_s=float("inf")).validate(cli_flags())
    with pytest.raises(ConfigError, match=r"^--node-auth needs TLS.*--insecure$"):
        FlowerConfig(insecure=True, node_auth=True).validate(cli_flags())


def test_defaults_and_good_values_pass() -> None:
    default = FlowerConfig()
    assert default.validate() is default
    assert default.bind_address == "127.0.0.1"
    FlowerConfig(run_timeout_s=5, sim_num_cpus=2, node_poll_s=None, bind_address="127.0.0.2")
    FlowerConfig(insecure=True, bind_address="127.0.0.2").validate()  # loopback: allowed


def _routable_address() -> str | None:
    """A non-loopback IPv4 address of this machine, if it has one."""
    for addrs in psutil.net_if_addrs().values():
        for a in addrs:
            if a.family.name == "AF_INET" and not a.address.startswith("127."):
                return str(a.address)
    return None


def test_a_non_loopback_address_needs_tls_and_must_be_this_machines() -> None:
    # TEST-NET-1 (RFC 5737): no interface has it; refused with --insecure before the bind test.
    with pytest.raises(ConfigError, match=r"^--bind-address 192.0.2.7 is not loopback.*--insecure"):
        FlowerConfig(insecure=True, bind_address="192.0.2.7").validate(cli_flags())
    with pytest.raises(ConfigError, match=r"^--bind-address 192.0.2.7: cannot listen there"):
        FlowerConfig(bind_address="192.0.2.7").validate(cli_flags())
    routable = _routable_address()
    if routable is None:
        pytest.skip("this machine has no non-loopback IPv4 address")
    assert FlowerConfig(bind_address=routable).validate().bind_address == routable


def test_from_options_refuses_unknown_keys_and_checks_values() -> None:
    assert FlowerConfig.from_options({"round_timeout_s": 30}).round_timeout_s == 30
    with pytest.raises(ConfigError, match=r"unknown Flower option\(s\): \['round_timeout'\]"):
        FlowerConfig.from_options({"round_timeout": 30})
    with pytest.raises(ConfigError, match="round_timeout_s must be a finite number"):
        FlowerConfig.from_options({"round_timeout_s": float("nan")})


def test_a_simulation_waits_at_least_its_floor_for_ray_to_start_its_clients():
    from fedcare.flower.simulation import SIMULATION_STARTUP_S, SimulationStage1Runner

    assert SimulationStage1Runner().flower.startup_timeout_s == SIMULATION_STARTUP_S
    short = SimulationStage1Runner(FlowerConfig(startup_timeout_s=30.0))
    assert short.flower.startup_timeout_s == SIMULATION_STARTUP_S
    longer = SimulationStage1Runner(FlowerConfig(startup_timeout_s=SIMULATION_STARTUP_S + 60))
    assert longer.flower.startup_timeout_s == SIMULATION_STARTUP_S + 60
