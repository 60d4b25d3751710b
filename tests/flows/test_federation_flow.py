"""The ``fedcare`` flow with ``backend="federation"``: Stage 1 over real sites, in MLflow.

* Without a running coordinator the flow run (the deployment's parameters, backend federation)
  ends Failed with one line, no MLflow run made; a failure inside a seed's Stage 1 ends it
  Failed with one line too, its parent run ``FAILED``.
* Slow: two sites prepared from the real Diabetes 130 file, a coordinator on loopback, each
  site's node in a thread following the federation (``site join --personalise``, its own
  MLflow store); the flow refuses ``min_sites`` beyond the registered sites, then runs 2 rounds:
  λ* equal an in-process Stage 1 on the same sites, the run is nested under the flow's parent
  run, every site received ``w*``. The flow runs again, as the re-training schedule runs it:
  every site re-trained itself both times and holds a new champion, or its new version's
  ``fedcare.promotion`` tag says why not. No Flower process of the test is left.
"""

from __future__ import annotations

import csv
import io
import json
import threading
import time
import uuid
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import fedcare.tracking  # noqa: F401  (MLflow environment defaults before mlflow loads)
from fedcare_core.config import ExperimentConfig
from fedcare_core.errors import FedcareError
from fedcare_core.sites.schema import FederationSchema, schema_for
from flows.fedcare_flow import fedcare_pipeline
from flows.federation_flow import document_path, run_name, stage1_summary
from tests.faults.run_processes import MARK_ENV, processes_left
from tests.flows.test_deployment import _rendered_deployment
from tests.flows.test_fedcare_flow import _task_runs
from tests.flows.test_flow_config_errors import _flow_run_logs

ROUNDS = 2
#: The sites: name → objectives (each site's patients: patient_nbr % 2 == its index).
SITES = {"site-a": ["readmission"], "site-b": ["los"]}
ENCOUNTERS = 6000


def test_run_names_are_unique_per_seed_and_flow_run() -> None:
    a, b = run_name(0, "0123456789abcdef"), run_name(1, "0123456789abcdef")
    assert a.startswith("fedcare-") and a.endswith("-01234567-seed0") and b.endswith("-seed1")
    assert run_name(0, None).endswith("-local-seed0")


def test_the_summary_holds_the_last_rounds_lambda() -> None:
    doc = {
        "seed": 3, "run_name": "r", "sites": [{"name": "a"}, {"name": "b"}], "rounds_run": 2,
        "rounds": [{"lambda": {"los": 0.1}}, {"lambda": {"los": 0.7}}], "w_star_sha256": "ab",
        "notes": [], "dataset": "diabetes130",
    }  # fmt: skip
    summary = stage1_summary(doc, "run1")
    assert summary["lambda"] == {"los": 0.7} and summary["sites"] == ["a", "b"]
    assert summary["mlflow_run_id"] == "run1" and summary["w_star_sha256"] == "ab"
    assert stage1_summary({**doc, "rounds": []}, "run1")["lambda"] == {}
    assert document_path(Path("/o"), doc) == Path("/o/diabetes130-federation-stage1-seed3.json")


def test_without_a_running_coordinator_the_flow_fails_before_any_mlflow_run(
    prefect_harness: None, tmp_path: Path
) -> None:
    # The deployment's own parameters, with what prefect.yaml's comment passes on top.
    deployment = _rendered_deployment("full-experiment", "flows.fedcare_flow:fedcare_pipeline")
    schema = schema_for(ExperimentConfig()).write(tmp_path / "federation.json")
    state = fedcare_pipeline(
        **{
            **deployment["parameters"], "backend": "federation",
            "federation_state_dir": str(tmp_path / "state"), "federation_schema": str(schema),
            "min_sites": 3, "tracking_uri": f"sqlite:///{tmp_path / 'mlflow.db'}",
            "reports_dir": str(tmp_path / "r"),
        },
        return_state=True,
    )  # fmt: skip
    assert state.is_failed()
    message = state.message or ""
    assert "is not running" in message and str(tmp_path / "state") in message, message
    with pytest.raises(FedcareError):
        state.result()
    logs = "\n".join(_flow_run_logs(state.state_details.flow_run_id))
    assert "Traceback" not in logs and "is not running" in logs, logs
    assert sorted(p.name for p in tmp_path.iterdir()) == ["federation.json"]


def test_a_failure_inside_stage1_fails_the_flow_run_in_one_line(
    prefect_harness: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow.tracking import MlflowClient

    from fedcare.sites.coordinator import CoordinatorError

    offline = "1 of the 3 sites needed joined within 600 s; offline: c, d"

    def run_federation(*args: object, **kwargs: object) -> None:
        raise CoordinatorError(offline)

    # A coordinator that runs with enough sites registered, whose sites do not come online.
    monkeypatch.setattr("fedcare.sites.coordinator.Coordinator.require_running", lambda s: {})
    monkeypatch.setattr("fedcare.sites.federation_run.run_sites", lambda *a, **k: ())
    monkeypatch.setattr("fedcare.sites.federation_run.run_federation", run_federation)
    schema = schema_for(ExperimentConfig()).write(tmp_path / "federation.json")
    uri = f"sqlite:///{tmp_path / 'mlflow' / 'mlflow.db'}"
    state = fedcare_pipeline(
        backend="federation", federation_state_dir=str(tmp_path / "state"),
        federation_schema=str(schema), min_sites=3, rounds=ROUNDS, seeds=[4, 5],
        tracking_uri=uri, reports_dir=str(tmp_path / "r"), return_state=True,
    )  # fmt: skip
    assert state.is_failed() and state.message == f"CoordinatorError: {offline}", state.message
    logs = "\n".join(_flow_run_logs(state.state_details.flow_run_id))
    assert "Traceback" not in logs and offline in logs, logs
    (task_run,) = _task_runs(state.state_details.flow_run_id, "stage1-federation", 1)
    assert task_run.name == "stage1-federation-seed4" and task_run.state_type.value == "FAILED"
    mc = MlflowClient(tracking_uri=uri)
    (parent,) = mc.search_runs([e.experiment_id for e in mc.search_experiments()])
    assert parent.info.status == "FAILED"  # and no Stage 1 run was logged
    assert parent.data.tags["fedcare.failed_at"] == "stage 1 seed 4"


# ---- a real federation of two sites ---------------------------------------------------------


def write_site_files(zip_path: Path, out: Path) -> dict[str, Path]:
    """The first :data:`ENCOUNTERS` encounters of the real file, split by ``patient_nbr``."""
    with zipfile.ZipFile(zip_path) as zf, zf.open("dataset_diabetes/diabetic_data.csv") as raw:
        text = io.TextIOWrapper(raw, encoding="utf-8", newline="")
        header = next(text)
        lines = [line for _, line in zip(range(ENCOUNTERS), text, strict=False)]
    column = next(csv.reader([header])).index("patient_nbr")
    files: dict[str, Path] = {}
    for index, name in enumerate(SITES):
        rows = [ln for ln in lines if int(next(csv.reader([ln]))[column]) % 2 == index]
        files[name] = out / f"{name}.csv"
        files[name].write_text(header + "".join(rows))
    return files


@dataclass
class SiteFederation:
    """Two prepared sites, their coordinator (running) and their nodes (threads)."""

    root: Path
    schema: FederationSchema
    schema_path: Path
    folders: dict[str, Path]
    clients: dict[str, Any]
    coordinator: Any
    errors: list[BaseException] = field(default_factory=list)
    said: list[str] = field(default_factory=list)


def site_store(folder: Path) -> str:
    """The MLflow store a following site registers its re-trained models in."""
    return f"sqlite:///{folder / 'mlflow.db'}"


def _join(folder: Path, address: str, ca_cert: Path, stop: threading.Event, fed: Any) -> None:
    from fedcare.sites.site_folder import SiteFolder
    from fedcare.sites.site_join import Following, join_federation

    follow = Following(site_store(folder), margin=0.005)
    try:
        join_federation(
            SiteFolder(folder), address, ca_cert, stop_when=stop.is_set, follow=follow,
            say=lambda line: fed.said.append(line),
        )  # fmt: skip
    except BaseException as exc:  # reported by the fixture's teardown
        fed.errors.append(exc)


@pytest.fixture
def site_federation(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[SiteFederation]:
    """Sites prepared, the coordinator started and both registered, both nodes running.

    Every process started from here on carries a fresh :data:`MARK_ENV`; teardown stops the
    nodes and the coordinator, then checks that none of them is left.
    """
    from mlflow.tracking import MlflowClient

    from fedcare.procs.ports import free_port
    from fedcare.sites.coordinator import Coordinator
    from fedcare.sites.site_folder import SiteFolder, create_site_folder
    from fedcare.sites.site_input import load_site

    mark = uuid.uuid4().hex
    monkeypatch.setenv(MARK_ENV, mark)
    files = write_site_files(data_dir / "diabetes130" / "dataset_diabetes.zip", tmp_path)
    # 2 sites × 1 objective cannot "cover" diabetes130's 3 objectives: a simulated-partition
    # check (data.cover_all_objectives) that run_config would otherwise apply to the sites.
    config = ExperimentConfig().with_overrides(
        stage1={"rounds": ROUNDS}, data={"cover_all_objectives": False}
    )
    schema = schema_for(config)
    schema_path = schema.write(tmp_path / "federation.json")
    folders, clients = {}, {}
    for name, objectives in SITES.items():
        loaded = load_site(schema, files[name], objectives, name=name, seed=0)
        folders[name] = tmp_path / "sites" / name
        clients[name] = loaded.client
        create_site_folder(
            folders[name], loaded.client, schema, name=name, seed=0,
            source_sha256=loaded.provenance.sha256,
        )  # fmt: skip
    coordinator = Coordinator(tmp_path / "state")
    fed = SiteFederation(tmp_path, schema, schema_path, folders, clients, coordinator)
    stop, threads = threading.Event(), []
    try:
        port = free_port()
        coordinator.start("127.0.0.1", port)
        for folder in folders.values():
            coordinator.register(SiteFolder(folder).card())
        for folder in folders.values():
            # Set up before the node starts, as `site join --personalise` does (one process
            # creates a store's tables; the site's Stage 2 runs then only use them).
            MlflowClient(site_store(folder)).search_experiments(max_results=1)
            args = (folder, f"127.0.0.1:{port}", coordinator.ca_cert, stop, fed)
            threads.append(threading.Thread(target=_join, args=args, daemon=True))
            threads[-1].start()
        yield fed
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=90)
        coordinator.stop()
        left = processes_left(mark)
    assert not any(t.is_alive() for t in threads), "a site's node did not stop"
    assert left == [], f"processes left: {left}"
    assert fed.errors == [], fed.errors


def _in_process_lambdas(fed: SiteFederation) -> list[dict[str, float]]:
    """λ* per round of Stage 1 on the same sites, in this process (one torch thread)."""
    import torch

    from fedcare_core.sites.client import federation_of_sites
    from fedcare_core.stage1.loop import run_stage1

    config = fed.schema.run_config(seed=0, clients=len(SITES), rounds=ROUNDS)
    federation = federation_of_sites(fed.schema, list(fed.clients.items()))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as every Flower process computes
    try:
        result = run_stage1(federation, config.model, config.stage1, config.seed)
    finally:
        torch.set_num_threads(threads)
    return [dict(r.lambdas) for r in result.rounds]


def _received_w_star(folders: dict[str, Path], timeout_s: float = 60.0) -> dict[str, bool]:
    """Whether each site folder holds ``stage1/stage1.json`` (the broadcast may trail the run)."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = {n: (f / "stage1" / "stage1.json").is_file() for n, f in folders.items()}
        if all(got.values()) or time.monotonic() > deadline:
            return got
        time.sleep(0.5)


@pytest.mark.slow
@pytest.mark.realdata
def test_the_flow_runs_stage1_over_real_sites(
    prefect_harness: None, site_federation: SiteFederation
) -> None:
    from mlflow.tracking import MlflowClient

    fed, root = site_federation, site_federation.root
    uri = f"sqlite:///{root / 'mlflow' / 'mlflow.db'}"
    common: dict[str, Any] = {
        "backend": "federation", "federation_state_dir": str(fed.coordinator.root),
        "federation_schema": str(fed.schema_path), "rounds": ROUNDS, "seeds": [0],
        "tracking_uri": uri, "reports_dir": str(root / "reports"), "out_dir": str(root / "out"),
    }  # fmt: skip

    t0 = time.perf_counter()
    refused = fedcare_pipeline(min_sites=3, return_state=True, **common)
    assert refused.is_failed(), refused
    assert "min_sites 3: 2 site(s) are registered" in (refused.message or ""), refused.message
    assert not (root / "mlflow").exists()  # refused before the parent run

    state = fedcare_pipeline(min_sites=2, return_state=True, **common)
    flow_s = time.perf_counter() - t0
    assert state.is_completed(), state.message
    out = state.result()
    assert isinstance(out, dict), out
    (summary,) = out["runs"]
    assert out["tracking_uri"] == uri and summary["seed"] == 0
    assert summary["sites"] == sorted(SITES) and summary["rounds_run"] == ROUNDS

    # The document (out_dir) equals an in-process Stage 1 on the same sites.
    document = json.loads((root / "out" / "diabetes130-federation-stage1-seed0.json").read_text())
    assert document["w_star_sha256"] == summary["w_star_sha256"]
    expected = _in_process_lambdas(fed)
    got = [r["lambda"] for r in document["rounds"]]
    assert len(got) == len(expected) == ROUNDS
    for r_got, r_ref in zip(got, expected, strict=True):
        assert r_got.keys() == r_ref.keys() == set(document["objectives"])
        for objective, value in r_ref.items():
            assert r_got[objective] == pytest.approx(value, abs=1e-6), (objective, r_got)
    assert summary["lambda"] == got[-1]

    # The Stage 1 run, nested under the flow run's parent run.
    mc = MlflowClient(tracking_uri=uri)
    run = mc.get_run(summary["mlflow_run_id"])
    parent = mc.get_run(out["parent_run_id"])
    assert run.info.status == "FINISHED" and parent.info.status == "FINISHED"
    assert run.info.experiment_id == parent.info.experiment_id
    assert run.data.tags["mlflow.parentRunId"] == parent.info.run_id
    assert run.data.tags["prefect.flow_run_id"] == str(state.state_details.flow_run_id)
    assert run.data.tags["fedcare.backend"] == "federation"
    assert parent.data.params["flow.backend"] == "federation"
    for objective in document["objectives"]:
        history = mc.get_metric_history(run.info.run_id, f"lambda/{objective}")
        assert sorted(m.step for m in history) == [1, 2], objective
    assert run.info.run_name == f"seed0 · {document['run_name'].removesuffix('-seed0')}"
    assert parent.info.run_name.startswith("flow · ") and parent.info.run_name.endswith(" · seed 0")
    artifacts = {a.path for a in mc.list_artifacts(run.info.run_id)}
    assert {"stage1.json", "stage1"} <= artifacts
    names = [r.name for r in _task_runs(state.state_details.flow_run_id, "stage1-federation", 1)]
    assert names == ["stage1-federation-seed0"]

    # Every site received w*; the coordinator held no patient data.
    assert _received_w_star(fed.folders) == dict.fromkeys(SITES, True)
    print(f"flow runs (refused + 2 rounds over 2 sites): {flow_s:.1f} s")

    # The re-training schedule runs the same flow again: every following site re-trains.
    _wait_for_versions(fed, 1)
    again = fedcare_pipeline(min_sites=2, return_state=True, **common)
    assert again.is_completed(), again.message
    _wait_for_versions(fed, 2)
    _every_site_holds_a_new_champion_or_a_reason(fed)


def _wait_for_versions(fed: SiteFederation, count: int, timeout_s: float = 300.0) -> None:
    """Until every site's store holds ``count`` versions of its model and its join said so."""
    from mlflow.tracking import MlflowClient

    deadline = time.monotonic() + timeout_s
    for name, folder in fed.folders.items():
        client = MlflowClient(site_store(folder), registry_uri=site_store(folder))
        while True:
            models = client.search_registered_models()
            versions = client.search_model_versions(f"name='{models[0].name}'") if models else []
            said = [line for line in fed.said if f"site {name}:" in line and "(challenger)" in line]
            if len(versions) >= count and len(said) >= count:
                break
            assert time.monotonic() < deadline, (name, "\n".join(fed.said))
            time.sleep(1)


def _every_site_holds_a_new_champion_or_a_reason(fed: SiteFederation) -> None:
    """Each site's newest version is its champion, or its ``fedcare.promotion`` tag says why not."""
    from mlflow.tracking import MlflowClient

    from fedcare.tracking.registry import TAG_PROMOTED, TAG_PROMOTION

    for name, folder in fed.folders.items():
        client = MlflowClient(site_store(folder), registry_uri=site_store(folder))
        (model,) = client.search_registered_models()
        versions = sorted(
            client.search_model_versions(f"name='{model.name}'"), key=lambda v: int(v.version)
        )
        assert len(versions) == 2, (name, versions)
        first, newest = versions
        assert "no champion yet" in first.tags[TAG_PROMOTION], first.tags
        champion = client.get_model_version_by_alias(model.name, "champion")
        why = newest.tags[TAG_PROMOTION]
        if newest.tags[TAG_PROMOTED] == "true":
            assert champion.version == newest.version and "promoted" in why, (name, why)
        else:
            assert champion.version == first.version and "kept" in why, (name, why)
