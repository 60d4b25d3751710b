"""Where the stack keeps its state, which ports it uses, and the environment of its services."""

from __future__ import annotations

import ipaddress
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from fedcare_core.errors import ConfigError

#: The default interface: nothing of the stack listens beyond this machine unless the user
#: names another address (``fedcare stack up --host``).
LOOPBACK = "127.0.0.1"
_DEFAULT_PREFECT_PORT = 4200
_DEFAULT_MLFLOW_PORT = 5000
_MAX_PORT = 65_535
#: The process work pool of ``prefect.yaml``'s deployments.
WORK_POOL = "fedcare-process"
#: State folder, relative to the project.
_STATE_DIR = ".stack"
#: Environment marker every stack process (and its descendants) carries.
TOKEN_ENV = "FEDCARE_STACK_TOKEN"
#: Environment variable the deployment's pull step reads (``set_working_directory``).
_PROJECT_DIR_ENV = "FEDCARE_PROJECT_DIR"
#: Data folder the re-training schedule of ``prefect.yaml`` passes as ``data_dir``.
RETRAIN_DATA_ENV = "FEDCARE_RETRAIN_DATA_DIR"

#: Telemetry and update checks off for every service and every flow run (nothing calls out).
OFFLINE_ENV: Mapping[str, str] = {
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_CLI_PROMPT": "false",
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false",
    "FLWR_TELEMETRY_ENABLED": "0",
    "GX_ANALYTICS_ENABLED": "false",
}


def project_root() -> Path:
    """The project folder: the one holding ``prefect.yaml`` above this package."""
    return Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class StackConfig:
    """Ports and folders of one stack.

    Parameters
    ----------
    project
        The project folder (``prefect.yaml``, the flows; the flow runs' working directory).
    state
        Pid files, logs, the Prefect home and database (default ``<project>/.stack``).
    mlflow_dir
        The MLflow store: ``mlflow.db`` and ``artifacts/`` (default ``<project>/mlflow``).
    prefect_port, mlflow_port
        Ports of the Prefect API/UI and of the MLflow tracking server/UI.
    host
        The IPv4 address both servers listen on and clients dial (default loopback). Neither
        server authenticates its clients: another address opens them to its whole network.
    data_dir
        The data folder flow runs fall back to (``FEDCARE_DATA_DIR``) and the re-training
        schedule reads; ``None``: the caller's ``FEDCARE_DATA_DIR`` or ``../shared/datasets``.
    python
        The interpreter whose ``prefect`` and ``mlflow`` run the services.
    """

    project: Path = field(default_factory=project_root)
    state: Path | None = None
    mlflow_dir: Path | None = None
    prefect_port: int = _DEFAULT_PREFECT_PORT
    mlflow_port: int = _DEFAULT_MLFLOW_PORT
    data_dir: Path | None = None
    python: str = sys.executable
    host: str = LOOPBACK

    def __post_init__(self) -> None:
        for flag, value in (
            ("--prefect-port", self.prefect_port),
            ("--mlflow-port", self.mlflow_port),
        ):
            if not 1 <= value <= _MAX_PORT:
                raise ConfigError(f"{flag} must lie in [1, {_MAX_PORT:,}], got {value}")
        if self.prefect_port == self.mlflow_port:
            raise ConfigError(
                f"--prefect-port and --mlflow-port are both {self.prefect_port}: the Prefect and "
                "MLflow servers cannot listen on one port; give each its own"
            )
        try:
            ip = ipaddress.IPv4Address(self.host)
        except ValueError:
            raise ConfigError(f"--host must be an IPv4 address, got {self.host!r}") from None
        if ip.is_unspecified or ip.is_multicast:
            raise ConfigError(
                f"--host must name one address of this machine, got {self.host} "
                "(0.0.0.0 would open the unauthenticated servers on every interface)"
            )

    @property
    def loopback(self) -> bool:
        """Whether the servers listen on loopback only."""
        return ipaddress.IPv4Address(self.host).is_loopback

    @property
    def state_dir(self) -> Path:
        """The state folder."""
        return (self.state or self.project / _STATE_DIR).resolve()

    @property
    def mlflow_store(self) -> Path:
        """The MLflow store folder."""
        return (self.mlflow_dir or self.project / "mlflow").resolve()

    @property
    def prefect_home(self) -> Path:
        """``PREFECT_HOME`` of the server, worker and CLI calls."""
        return self.state_dir / "prefect"

    @property
    def logs_dir(self) -> Path:
        """One log file per service."""
        return self.state_dir / "logs"

    @property
    def pids_dir(self) -> Path:
        """One pid file per service."""
        return self.state_dir / "pids"

    @property
    def prefect_url(self) -> str:
        """The Prefect UI."""
        return f"http://{self.host}:{self.prefect_port}"

    @property
    def prefect_api_url(self) -> str:
        """The Prefect API (``PREFECT_API_URL``)."""
        return f"{self.prefect_url}/api"

    @property
    def mlflow_url(self) -> str:
        """The MLflow tracking server and UI (``MLFLOW_TRACKING_URI``)."""
        return f"http://{self.host}:{self.mlflow_port}"

    @property
    def resolved_data_dir(self) -> Path:
        """The data folder given, else ``$FEDCARE_DATA_DIR``, else ``../shared/datasets``."""
        if self.data_dir is not None:
            return self.data_dir.resolve()
        env = os.environ.get("FEDCARE_DATA_DIR")
        if env:
            return Path(env).expanduser().resolve()
        return (self.project.parent / "shared" / "datasets").resolve()

    def client_env(self) -> dict[str, str]:
        """What a Prefect or MLflow client needs to talk to this stack.

        The model registry is the stack's MLflow server too: a ``MLFLOW_REGISTRY_URI`` in the
        caller's environment (MLflow exports one whenever a process sets its registry) must not
        send the flow runs' registrations to another store.
        """
        return {
            **OFFLINE_ENV,
            "PREFECT_HOME": str(self.prefect_home),
            "PREFECT_API_URL": self.prefect_api_url,
            "MLFLOW_TRACKING_URI": self.mlflow_url,
            "MLFLOW_REGISTRY_URI": self.mlflow_url,
        }

    def service_env(self, token: str) -> dict[str, str]:
        """The environment of every service: the caller's, the client settings, the marker.

        The worker hands it to each flow run, so flow runs log to this stack's MLflow server,
        read ``FEDCARE_DATA_DIR`` when given no ``data_dir``, and run in the project folder.
        """
        env = dict(os.environ)
        env.update(self.client_env())
        env.update(
            {
                TOKEN_ENV: token,
                _PROJECT_DIR_ENV: str(self.project.resolve()),
                "FEDCARE_DATA_DIR": str(self.resolved_data_dir),
                RETRAIN_DATA_ENV: os.environ.get(RETRAIN_DATA_ENV) or str(self.resolved_data_dir),
                "PREFECT_SERVER_API_HOST": self.host,
                "PREFECT_SERVER_API_PORT": str(self.prefect_port),
                "PREFECT_API_DATABASE_CONNECTION_URL": "sqlite+aiosqlite:///"
                + str(self.prefect_home / "prefect.db"),
                "PYTHONUNBUFFERED": "1",
            }
        )
        return env
