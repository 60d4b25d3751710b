"""One tiny FedCARE run logged to a throw-away SQLite store, shared by the tracking tests."""

from __future__ import annotations

import dataclasses
import ipaddress
import socket
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

import fedcare.tracking  # noqa: F401  (sets the MLflow environment defaults before mlflow loads)
from fedcare_core.config import DataConfig, ExperimentConfig, Stage1Config, Stage2Config
from fedcare_core.run.pipeline import run_experiment
from tests.fedcare_core.synthetic import PARTITION, make_cohort

#: Patient keys are moved to this unusual range so a leak is easy to spot in any logged text.
PATIENT_OFFSET = 7_300_000_000
FLOW_RUN_ID = "0b1c2d3e-flow-run"


def tiny_config() -> ExperimentConfig:
    return ExperimentConfig(
        data=DataConfig(clients=3),
        stage1=Stage1Config(rounds=3, batch_size=32),
        stage2=Stage2Config(epochs=2, batch_size=32),
    )


def _loopback(address: object) -> bool:
    host = address[0] if isinstance(address, tuple) else address
    try:
        return ipaddress.ip_address(str(host)).is_loopback
    except ValueError:
        return host == "localhost"


@pytest.fixture(scope="package")
def no_network() -> Iterator[None]:
    """Fail any connection off this machine while the tracking tests run."""
    real_connect = socket.socket.connect

    def guarded(self: socket.socket, address: object) -> object:
        if self.family != socket.AF_UNIX and not _loopback(address):
            raise AssertionError(f"network access attempted: {address!r}")
        return real_connect(self, address)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket.socket, "connect", guarded)
        yield


@pytest.fixture(autouse=True)
def _logged_store_in_use(request: pytest.FixtureRequest) -> None:
    """A test on :func:`logged`'s runs talks to its store, whatever an earlier test in this
    worker pointed MLflow at (xdist hands tests to workers in no fixed order)."""
    if "logged" in request.fixturenames:
        from fedcare.tracking import store

        store.configure(request.getfixturevalue("logged").uri)


@pytest.fixture(scope="package")
def logged(tmp_path_factory: pytest.TempPathFactory, no_network: None) -> SimpleNamespace:
    """Run the baby experiment, log it under a flow-level parent run, and describe the store."""
    from fedcare.tracking import log_run, store

    root = tmp_path_factory.mktemp("tracking")
    cohort = make_cohort(300)
    cohort = dataclasses.replace(cohort, patient=cohort.patient + PATIENT_OFFSET)
    result = run_experiment(cohort, PARTITION, tiny_config())

    report = root / "validation_report"
    report.mkdir()
    (report / "index.html").write_text("<html><body>3 tables, 0 failures</body></html>\n")
    (report / "summary.json").write_text('{"passed": true}\n')

    uri = store.configure(store.default_tracking_uri(root))
    parent = store.start_parent_run(
        "synthetic", run_name="flow", tags={log_run.TAG_FLOW_RUN_ID: FLOW_RUN_ID}
    )
    run_id = log_run.log_experiment(
        result,
        parent_run_id=parent,
        flow_run_id=FLOW_RUN_ID,
        extra_artifacts={"validation": report},
    )
    store.finish_run(parent)
    return SimpleNamespace(
        root=root,
        uri=uri,
        result=result,
        doc=result.to_dict(),
        parent_id=parent,
        run_id=run_id,
        patients=cohort.patient,
        cohort=cohort,
    )


def artifact_dir(uri: str) -> Path:
    """Local folder of a ``file://`` artifact URI."""
    assert uri.startswith("file://"), uri
    return Path(uri[len("file://") :])
