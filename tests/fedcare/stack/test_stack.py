"""Stack pieces without starting the real services: environment, detached processes, teardown."""

from __future__ import annotations

import socket
import sys
import time
from pathlib import Path

import pytest

from fedcare.procs.marked import alive, marked_processes, terminate_marked
from fedcare.procs.ports import free_port, port_open
from fedcare.procs.services import read_pid, start_detached, stop_group
from fedcare.stack import stack
from fedcare.stack.settings import LOOPBACK, TOKEN_ENV, StackConfig


def test_environment_is_loopback_offline_and_project_bound(tmp_path: Path) -> None:
    config = StackConfig(state=tmp_path / "s", mlflow_dir=tmp_path / "m", data_dir=tmp_path)
    env = config.service_env("tok")
    assert env["PREFECT_API_URL"] == f"http://{LOOPBACK}:4200/api"
    assert env["MLFLOW_TRACKING_URI"] == f"http://{LOOPBACK}:5000"
    assert env["PREFECT_HOME"] == str((tmp_path / "s" / "prefect").resolve())
    assert env["PREFECT_API_DATABASE_CONNECTION_URL"].endswith("/s/prefect/prefect.db")
    assert env["FEDCARE_PROJECT_DIR"] == str(config.project)
    assert (config.project / "prefect.yaml").is_file()
    assert env["FEDCARE_DATA_DIR"] == str(tmp_path.resolve())
    assert env[TOKEN_ENV] == "tok"
    offline = {
        "DO_NOT_TRACK": "1",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "MLFLOW_DISABLE_TELEMETRY": "true",
        "FLWR_TELEMETRY_ENABLED": "0",
    }
    assert offline.items() <= env.items()


def test_detached_group_is_stopped_and_marked_processes_swept(tmp_path: Path) -> None:
    token = "t" + str(time.time_ns())
    # A leader with a child in its group, and a marked process in a session of its own.
    script = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', " \
        "'import time; time.sleep(60)']); time.sleep(60)"  # fmt: skip
    pid = start_detached(
        [sys.executable, "-c", script],
        env={TOKEN_ENV: token, "PATH": "/usr/bin:/bin"},
        log=tmp_path / "a.log",
        pid_file=tmp_path / "a.pid",
        cwd=tmp_path,
    )
    other = start_detached(
        [sys.executable, "-c", "import time; time.sleep(60)"],
        env={TOKEN_ENV: token},
        log=tmp_path / "b.log",
        pid_file=tmp_path / "b.pid",
        cwd=tmp_path,
    )
    assert read_pid(tmp_path / "a.pid") == pid
    deadline = time.monotonic() + 20
    while len(marked_processes(TOKEN_ENV, token)) < 3 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(marked_processes(TOKEN_ENV, token)) == 3
    assert stop_group(pid, grace_s=5) is False
    assert not alive(pid)
    assert marked_processes(TOKEN_ENV, token) == [other]
    assert terminate_marked(TOKEN_ENV, token, 5.0) == [other]
    assert marked_processes(TOKEN_ENV, token) == []


def test_a_taken_port_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind((LOOPBACK, free_port(LOOPBACK)))
        sock.listen()
        port = sock.getsockname()[1]
        assert port_open(port, LOOPBACK)
        config = StackConfig(state=tmp_path / "s", mlflow_dir=tmp_path / "m", prefect_port=port)
        with pytest.raises(stack.StackError, match=f"port {port} .* taken by another program"):
            stack.up(config, say=lambda _: None)
    assert all(not s.running for s in stack.status(config))


def test_the_token_file_and_state_folder_are_owner_only(tmp_path: Path) -> None:
    import os
    import stat as st

    config = StackConfig(state=tmp_path / "s", mlflow_dir=tmp_path / "m")
    old = os.umask(0o002)  # a permissive umask must not loosen them
    try:
        token = stack._token(config)
    finally:
        os.umask(old)
    path = config.state_dir / stack.TOKEN_FILE
    assert path.read_text().strip() == token
    assert st.S_IMODE(path.stat().st_mode) == 0o600
    assert st.S_IMODE(config.state_dir.stat().st_mode) == 0o700
    # What an older version left world-readable is replaced owner-only.
    path.chmod(0o644)
    config.state_dir.chmod(0o755)
    assert stack._token(config) != token  # no service runs: a fresh token
    assert st.S_IMODE(path.stat().st_mode) == 0o600
    assert st.S_IMODE(config.state_dir.stat().st_mode) == 0o700
    assert sorted(p.name for p in config.state_dir.iterdir()) == [stack.TOKEN_FILE]


def _host_of(argv: list[str]) -> str:
    return argv[argv.index("--host") + 1]


def test_the_servers_listen_on_loopback_unless_a_host_is_named(tmp_path: Path) -> None:
    default = StackConfig(state=tmp_path / "s", mlflow_dir=tmp_path / "m")
    for name in ("prefect-server", "mlflow-server"):
        assert _host_of(stack._argv(default, name)) == LOOPBACK
    assert "--allowed-hosts" not in stack._argv(default, "mlflow-server")
    assert default.service_env("t")["PREFECT_SERVER_API_HOST"] == LOOPBACK

    named = StackConfig(state=tmp_path / "s", mlflow_dir=tmp_path / "m", host="10.1.2.3")
    assert not named.loopback
    for name in ("prefect-server", "mlflow-server"):
        assert _host_of(stack._argv(named, name)) == "10.1.2.3"
    mlflow = stack._argv(named, "mlflow-server")
    assert mlflow[mlflow.index("--allowed-hosts") + 1] == "10.1.2.3,10.1.2.3:5000"
    env = named.service_env("t")
    assert env["PREFECT_SERVER_API_HOST"] == "10.1.2.3"
    assert env["PREFECT_API_URL"] == "http://10.1.2.3:4200/api"
    assert env["MLFLOW_TRACKING_URI"] == "http://10.1.2.3:5000"


@pytest.mark.parametrize(
    ("host", "words"),
    [("0.0.0.0", "one address"), ("stack.lan", "IPv4"), ("::1", "IPv4"), ("224.0.0.1", "one")],
)
def test_a_host_that_is_not_one_ipv4_address_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], host: str, words: str
) -> None:
    from fedcare.cli.main import EXIT_ERROR, main

    assert main(["stack", "up", "--state-dir", str(tmp_path / "s"), "--host", host]) == EXIT_ERROR
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--host" in err[0] and words in err[0], err
    assert not (tmp_path / "s").exists()  # refused before anything was made
