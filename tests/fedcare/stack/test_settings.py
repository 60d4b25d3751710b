"""The stack's ports, checked when its configuration is made and before ``up`` touches anything."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from fedcare.procs.ports import free_port
from fedcare.stack import stack
from fedcare.stack.settings import LOOPBACK, StackConfig
from fedcare_core.errors import ConfigError


@pytest.mark.parametrize(
    ("ports", "part"),
    [
        ({"prefect_port": 4300, "mlflow_port": 4300}, "--prefect-port and --mlflow-port are both"),
        ({"prefect_port": 5000}, "are both 5000"),  # MLflow's default
        ({"prefect_port": 0}, "--prefect-port must lie in [1, 65,535], got 0"),
        ({"mlflow_port": 70_000}, "--mlflow-port must lie in [1, 65,535], got 70000"),
    ],
)
def test_ports_out_of_range_or_shared_are_refused(ports: dict[str, int], part: str) -> None:
    with pytest.raises(ConfigError) as exc:
        StackConfig(**ports)  # type: ignore[arg-type]
    assert part in str(exc.value)


def test_a_taken_port_is_refused_before_any_folder_token_or_process(tmp_path: Path) -> None:
    # The MLflow server's port is taken: the Prefect server was started first, and the state
    # folder, token and pid files written, before the refusal.
    with socket.socket() as sock:
        sock.bind((LOOPBACK, free_port(LOOPBACK)))
        sock.listen()
        port = sock.getsockname()[1]
        prefect = free_port(LOOPBACK)
        config = StackConfig(
            state=tmp_path / "s", mlflow_dir=tmp_path / "m", prefect_port=prefect, mlflow_port=port
        )
        with pytest.raises(stack.StackError, match=f"--mlflow-port {port} on {LOOPBACK} is taken"):
            stack.up(config, say=lambda _: None)
    assert list(tmp_path.iterdir()) == []
