"""Network hardening: loopback-only sockets, TLS by default, SuperNode authentication.

The certificate tests take milliseconds; the start-up tests start a federation, look at it and
stop it (seconds); the runs are slow.
"""

import ipaddress
import os
import signal
import stat
import subprocess
import time

import numpy as np
import psutil
import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import load_ssh_private_key

from fedcare.flower.deployment import DeploymentStage1Runner
from fedcare.flower.flower_options import FlowerConfig
from fedcare.flower.simulation import SimulationStage1Runner
from fedcare.flower.tls import RunSecurity, make_node_keys, make_tls
from fedcare.procs.children import executable
from fedcare.procs.ports import LOOPBACK, free_port
from fedcare_core.errors import ConfigError
from fedcare_core.run.pipeline import prepare_federation
from fedcare_core.stage1.loop import run_stage1
from tests.fedcare.flower.conftest import small_config
from tests.fedcare.flower.test_deployment import LAMBDA_TOL, PARAM_TOL, _assert_nothing_left
from tests.fedcare_core.synthetic import PARTITION

CERT_FLAGS = ("--ssl-ca-certfile", "--ssl-certfile", "--ssl-keyfile")


#: The SuperLink's access-log line of a ``flwr run`` accepted over TLS.
START_RUN_OK = '"POST /v1/control/start-run HTTP/1.1" 200'


def superlink_log(runner) -> str:
    """The SuperLink's log so far."""
    return (runner.workspace.logs_dir / "superlink.log").read_text(errors="replace")


def listening(root_pid: int) -> list[tuple[int, str, str, int]]:
    """``(pid, name, ip, port)`` of every LISTEN socket of ``root_pid`` and its descendants."""
    root = psutil.Process(root_pid)
    out = []
    for proc in [root, *root.children(recursive=True)]:
        try:
            conns = proc.net_connections(kind="inet")
            name = proc.name()
        except psutil.Error:  # exited meanwhile
            continue
        out += [(proc.pid, name, c.laddr.ip, c.laddr.port) for c in conns if c.status == "LISTEN"]
    return out


def is_loopback(ip: str) -> bool:
    """127.0.0.0/8, ::1, and IPv4-mapped loopback (``::ffff:127.0.0.1``, what gRPC reports)."""
    addr = ipaddress.ip_address(ip.split("%")[0])
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    return addr.is_loopback


def outside_loopback(sockets):
    return [s for s in sockets if not is_loopback(s[2])]


# ---- certificates ---------------------------------------------------------------------------


def test_the_ca_signs_a_loopback_server_certificate_with_private_keys(tmp_path):
    files = make_tls(tmp_path / "creds")
    ca = x509.load_pem_x509_certificate(files.ca_cert.read_bytes())
    server = x509.load_pem_x509_certificate(files.server_cert.read_bytes())
    server.verify_directly_issued_by(ca)  # raises if the CA did not sign it
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert not server.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    san = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert ipaddress.ip_address("127.0.0.1") in san.get_values_for_type(x509.IPAddress)
    assert "localhost" in san.get_values_for_type(x509.DNSName)
    lifetime = server.not_valid_after_utc - server.not_valid_before_utc
    assert lifetime.days <= 2  # short-lived: one run
    assert stat.S_IMODE(files.server_key.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "creds").stat().st_mode) == 0o700
    assert not list((tmp_path / "creds").glob("ca*.key"))  # the CA key is never written


def test_two_runs_get_different_authorities(tmp_path):
    a = make_tls(tmp_path / "a").ca_cert.read_bytes()
    assert a != make_tls(tmp_path / "b").ca_cert.read_bytes()


def test_node_keys_are_openssh_ec_pairs_with_a_private_mode(tmp_path):
    keys = make_node_keys(tmp_path / "nodes", "node-0")
    private = load_ssh_private_key(keys.private_key.read_bytes(), None)
    assert isinstance(private, ec.EllipticCurvePrivateKey)
    assert keys.public_key.read_text().startswith("ecdsa-sha2-nistp256 ")
    assert stat.S_IMODE(keys.private_key.stat().st_mode) == 0o600


def _san_ips(files):
    server = x509.load_pem_x509_certificate(files.server_cert.read_bytes())
    san = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return {str(ip) for ip in san.get_values_for_type(x509.IPAddress)}


def test_the_certificate_names_loopback_and_the_bind_address(tmp_path):
    assert _san_ips(RunSecurity(tmp_path / "d", insecure=False, node_auth=False).tls) == {
        "127.0.0.1"
    }
    named = RunSecurity(tmp_path / "n", insecure=False, node_auth=False, bind_address="10.1.2.3")
    assert _san_ips(named.tls) == {"127.0.0.1", "10.1.2.3"}
    with pytest.raises(ValueError, match="not loopback"):
        RunSecurity(tmp_path / "x", insecure=True, node_auth=False, bind_address="10.1.2.3")


def test_the_superlink_listens_where_it_is_told(tmp_path):
    def host_of(runner):
        sec = RunSecurity(tmp_path / runner.link_host, insecure=False, node_auth=False)
        cmd = runner.superlink_command(sec, 9093)
        return cmd[cmd.index("--host") + 1], cmd[cmd.index("--port") + 1]

    assert host_of(DeploymentStage1Runner(FlowerConfig())) == (LOOPBACK, "9093")
    named = DeploymentStage1Runner(FlowerConfig(bind_address="127.0.0.2"))
    assert host_of(named) == ("127.0.0.2", "9093")


def test_security_arguments(tmp_path):
    tls = RunSecurity(tmp_path / "c", insecure=False, node_auth=True)
    assert tls.superlink_args()[::2] == [*CERT_FLAGS, "--enable-supernode-auth"]
    assert tls.client_args() == ["--root-certificates", str(tls.tls.ca_cert)]
    node = tls.supernode_args(1)
    assert node[-2] == "--auth-supernode-private-key" and node[-1].endswith("node-1.key")
    assert tls.connection() == {"root-certificates": str(tls.tls.ca_cert)}
    plain = RunSecurity(tmp_path / "p", insecure=True, node_auth=False)
    assert plain.superlink_args() == plain.client_args() == ["--insecure"]
    assert plain.runtime_server_args() == [] and plain.connection() == {"insecure": True}
    assert not (tmp_path / "p").exists()
    with pytest.raises(ValueError, match="TLS"):
        RunSecurity(tmp_path / "x", insecure=True, node_auth=True)
    with pytest.raises(ConfigError, match="TLS"):
        FlowerConfig(insecure=True, node_auth=True).validate()


# ---- start-up: flags, sockets, authentication ----------------------------------------------


def _tiny(small_cohort):
    cfg = small_config(rounds=1)
    return cfg, prepare_federation(small_cohort, PARTITION, cfg, None)


def _start_and_stop(small_cohort, tmp_path, flower, look):
    """Start a deployment, call ``look(runner)`` once everything is started, then SIGINT it."""
    cfg, fed = _tiny(small_cohort)
    seen = {}

    def on_started(runner):
        try:
            seen["result"] = look(runner)
        finally:
            os.kill(os.getpid(), signal.SIGINT)

    runner = DeploymentStage1Runner(
        FlowerConfig(workdir_parent=str(tmp_path), shutdown_grace_s=3.0, **flower),
        on_started=on_started,
    )
    with pytest.raises(KeyboardInterrupt):
        runner(fed, cfg.model, cfg.stage1, cfg.seed, None)
    _assert_nothing_left(runner, tmp_path)
    return runner, seen.get("result")


def test_tls_is_the_default_and_insecure_passes_through(small_cohort, tmp_path):
    def argv(runner):
        procs = runner.supervisor.procs
        home = runner.workspace.root / "flwr-home" / "config.toml"
        return {name: list(p.args) for name, p in procs.items()}, home.read_text()

    _, (tls, config) = _start_and_stop(small_cohort, tmp_path, {}, argv)
    assert "--insecure" not in tls["superlink"]
    assert all(flag in tls["superlink"] for flag in CERT_FLAGS)
    for k in range(3):
        assert "--insecure" not in tls[f"supernode-{k}"]
        assert "--root-certificates" in tls[f"supernode-{k}"]
        assert all(flag in tls[f"supernode-{k}"] for flag in CERT_FLAGS)  # its runtime API
        assert "--root-certificates" in tls[f"superexec-{k}"]
    assert "root-certificates" in config and "insecure" not in config

    _, (plain, config) = _start_and_stop(small_cohort, tmp_path, {"insecure": True}, argv)
    assert "--insecure" in plain["superlink"]
    assert not any(flag in plain["superlink"] for flag in CERT_FLAGS)
    assert all(
        "--insecure" in plain[f"{kind}-{k}"]
        for kind in ("supernode", "superexec")
        for k in range(3)
    )
    assert "insecure = true" in config


def test_a_supernode_without_a_registered_key_cannot_join(small_cohort, tmp_path):
    def rogue(runner):
        sec = runner.security
        assert "--enable-supernode-auth" in runner.supervisor.procs["superlink"].args
        registered = [n for n in runner.supervisor.procs if n.startswith("register-")]
        assert registered == ["register-0", "register-1", "register-2"]
        assert all(runner.supervisor.procs[n].returncode == 0 for n in registered)
        keys = make_node_keys(sec.folder / "rogue", "rogue")
        link = runner.ports[0]
        cmd = [
            executable("flower-supernode"),
            *sec.client_args(),
            "--superlink",
            f"{LOOPBACK}:{link}",
            "--port",
            str(free_port()),
            "--max-retries",
            "1",
            "--auth-supernode-private-key",
            str(keys.private_key),
        ]
        proc = runner.supervisor.start("rogue", cmd)
        try:
            return proc.wait(timeout=90), runner.supervisor.log_tail("rogue", 40)
        except subprocess.TimeoutExpired:
            return None, runner.supervisor.log_tail("rogue", 40)

    _, (code, log) = _start_and_stop(small_cohort, tmp_path, {"node_auth": True}, rogue)
    assert code not in (None, 0), log
    assert "Failed to activate SuperNode" in log or "2004" in log, log


@pytest.mark.parametrize("bind", [None, "127.0.0.2"], ids=["default", "bind-address"])
def test_deployment_sockets_are_loopback(small_cohort, tmp_path, bind):
    def sockets(runner):
        deadline = time.monotonic() + 60
        found = []
        while time.monotonic() < deadline:  # until every SuperNode's runtime API listens
            found = listening(os.getpid())
            ports = {port for *_, port in found}
            if set(runner.ports) <= ports:
                break
            time.sleep(0.5)
        args = {name: list(p.args) for name, p in runner.supervisor.procs.items()}
        args["config.toml"] = (runner.workspace.root / "flwr-home" / "config.toml").read_text()
        while time.monotonic() < deadline and START_RUN_OK not in superlink_log(runner):
            time.sleep(0.5)  # `flwr run` verified the certificate at the SuperLink's address
        return found, args, superlink_log(runner)

    flower = {} if bind is None else {"bind_address": bind}
    runner, (found, args, log) = _start_and_stop(small_cohort, tmp_path, flower, sockets)
    assert set(runner.ports) <= {port for *_, port in found}, found
    assert outside_loopback(found) == [], found
    link_host = bind or LOOPBACK
    link, *nodes = runner.ports
    assert {ip for _, _, ip, port in found if port == link} == {link_host}, found
    assert {ip for _, _, ip, port in found if port in nodes} == {LOOPBACK}, found
    assert args["superlink"][args["superlink"].index("--host") + 1] == link_host
    for k in range(3):
        node = args[f"supernode-{k}"]
        assert node[node.index("--superlink") + 1] == f"{link_host}:{link}"
        assert node[node.index("--host") + 1] == LOOPBACK  # the runtime API stays on loopback
    assert f'address = "{link_host}:{link}"' in args["config.toml"]
    assert START_RUN_OK in log, log


# ---- runs -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_simulation_listens_only_on_loopback(small_cohort, tmp_path):
    cfg, fed = _tiny(small_cohort)
    before = os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER")
    sigterm = signal.getsignal(signal.SIGTERM)
    runner = SimulationStage1Runner(FlowerConfig(workdir_parent=str(tmp_path), sim_num_cpus=2))
    seen = []
    runner(fed, cfg.model, cfg.stage1, cfg.seed, lambda *a: seen.append(listening(os.getpid())))
    assert seen and all(seen), seen  # sampled while Ray's processes were up
    ray_sockets = [s for s in seen[0] if s[0] != os.getpid()]
    assert len(ray_sockets) >= 3, seen[0]  # GCS, raylet, workers at least
    assert outside_loopback(seen[0]) == [], seen[0]
    assert os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER") == before  # restored
    assert signal.getsignal(signal.SIGTERM) == sigterm  # ray.init's handler removed


@pytest.mark.slow
@pytest.mark.parametrize("flower", [{}, {"node_auth": True}], ids=["tls", "tls+node-auth"])
def test_a_tls_deployment_matches_local(small_federation, tmp_path, flower):
    cfg, fed = small_federation
    local = run_stage1(fed, cfg.model, cfg.stage1, cfg.seed)
    sockets = []
    runner = DeploymentStage1Runner(FlowerConfig(workdir_parent=str(tmp_path), **flower))
    dep = runner(
        fed, cfg.model, cfg.stage1, cfg.seed, lambda *a: sockets.append(listening(os.getpid()))
    )
    for a, b in zip(local.rounds, dep.rounds, strict=True):
        for s in a.lambdas:
            assert b.lambdas[s] == pytest.approx(a.lambdas[s], abs=LAMBDA_TOL)
        assert b.participants == (0, 1, 2)
    np.testing.assert_allclose(dep.params, local.params, atol=PARAM_TOL)
    link = runner.supervisor.procs["superlink"].args
    assert "--insecure" not in link and all(flag in link for flag in CERT_FLAGS)
    assert ("--enable-supernode-auth" in link) == bool(flower)
    assert sockets and outside_loopback([s for snap in sockets for s in snap]) == []
    _assert_nothing_left(runner, tmp_path)


def test_a_ray_that_would_not_bind_to_loopback_is_refused(monkeypatch):
    import ray.util

    from fedcare.flower.workspace import FlowerRunError

    before = os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER")
    monkeypatch.setattr(ray.util, "get_node_ip_address", lambda: "192.0.2.2")
    with pytest.raises(FlowerRunError, match="RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0"):
        SimulationStage1Runner._check_ray()
    assert os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER") == before  # restored
