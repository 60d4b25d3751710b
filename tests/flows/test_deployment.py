"""Integration: the real local stack runs ``fedcare/full-experiment`` twice; MLflow holds it all.

Brings up a Prefect server, a process worker, the deployments of ``prefect.yaml`` and an MLflow
tracking server (``fedcare.stack``, on free loopback ports, state in a temporary folder),
triggers the deployment with the Prefect CLI as ``make run`` does (``fedcare stack run``; small
settings, two seeds in two flow runs), then reads MLflow back over HTTP, and tears the stack
down, leaving no process. A quick test renders ``prefect.yaml`` as ``prefect deploy`` does
under the stack's environment: the re-training folder is in the deployment's description.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

import fedcare.tracking  # noqa: F401  (MLflow environment defaults before mlflow loads)
from fedcare.procs.marked import marked_processes
from fedcare.procs.ports import free_port, port_open
from fedcare.stack import stack
from fedcare.stack.run import run_deployment
from fedcare.stack.settings import LOOPBACK, RETRAIN_DATA_ENV, TOKEN_ENV, StackConfig

PREFECT_YAML = Path(__file__).resolve().parents[2] / "prefect.yaml"
ROUNDS = 4
SMALL = ["clients=3", f"rounds={ROUNDS}", "max_patients=3000", "stage2_epochs=3"]


def _run_deployment(config: StackConfig, params: list[str], log: Path) -> int:
    """``make run``'s wait: ``prefect deployment run --watch`` under ``fedcare stack run``."""
    with open(log, "w") as out:
        return run_deployment(
            config, "fedcare/full-experiment", params, out=out, say=lambda m: print(m, file=out)
        )


def _rendered_deployment(name: str, entrypoint: str) -> dict[str, Any]:
    """A deployment of ``prefect.yaml`` as ``prefect deploy`` renders it from its environment.

    Prefect's own loader (the file validated against its ``prefect.yaml`` model) and its
    ``{{ $VAR }}`` rendering, as in ``prefect.cli.deploy._core._run_single_deploy``.
    """
    import os

    from prefect.cli.deploy._config import _load_deploy_configs_and_actions
    from prefect.utilities.templating import apply_values
    from rich.console import Console

    configs, _ = _load_deploy_configs_and_actions(PREFECT_YAML, console=Console(quiet=True))
    (found,) = [c for c in configs if c["name"] == name and c["entrypoint"] == entrypoint]
    rendered: dict[str, Any] = apply_values(found, os.environ, remove_notset=False)
    return rendered


def test_the_retraining_folder_shows_in_the_deployment_description(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prefect.cli.deploy._schedules import _schedule_config_to_deployment_schedule

    # `fedcare stack up` runs `prefect deploy` with the stack's service environment.
    monkeypatch.delenv(RETRAIN_DATA_ENV, raising=False)
    config = StackConfig(state=tmp_path / "s", data_dir=tmp_path / "exports")
    folder = str((tmp_path / "exports").resolve())
    assert config.service_env("tok")[RETRAIN_DATA_ENV] == folder
    monkeypatch.setenv(RETRAIN_DATA_ENV, config.service_env("tok")[RETRAIN_DATA_ENV])

    deployment = _rendered_deployment("full-experiment", "flows.fedcare_flow:fedcare_pipeline")
    assert f"data_dir={folder}," in deployment["description"]
    assert "{{" not in deployment["description"]
    (schedule,) = [_schedule_config_to_deployment_schedule(s) for s in deployment["schedules"]]
    assert schedule["slug"] == "weekly-retrain"
    assert schedule["parameters"] == {"data_dir": folder, "verify_checksum": False}

    # A caller's own FEDCARE_RETRAIN_DATA_DIR wins over the stack's data folder.
    monkeypatch.setenv(RETRAIN_DATA_ENV, str(tmp_path / "elsewhere"))
    assert config.service_env("tok")[RETRAIN_DATA_ENV] == str(tmp_path / "elsewhere")


def _scheduled_runs(config: StackConfig) -> list[Any]:
    """Scheduled flow runs of the stack's server (polled: the scheduler runs every minute)."""
    from prefect.client.orchestration import SyncPrefectClient
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterState
    from prefect.client.schemas.filters import FlowRunFilterStateType as StateType
    from prefect.client.schemas.objects import StateType as Kind

    deadline = time.monotonic() + 150
    with SyncPrefectClient(config.prefect_api_url) as client:
        while True:
            runs = client.read_flow_runs(
                flow_run_filter=FlowRunFilter(
                    state=FlowRunFilterState(type=StateType(any_=[Kind.SCHEDULED]))
                )
            )
            if runs or time.monotonic() > deadline:
                return list(runs)
            time.sleep(5)


@pytest.mark.slow
@pytest.mark.realdata
def test_full_experiment_deployment_on_the_local_stack(data_dir: Path, tmp_path: Path) -> None:
    from mlflow.tracking import MlflowClient

    config = StackConfig(
        state=tmp_path / "stack",
        mlflow_dir=tmp_path / "mlflow",
        prefect_port=free_port(LOOPBACK),
        mlflow_port=free_port(LOOPBACK),
        data_dir=data_dir,
    )
    t0 = time.perf_counter()
    try:
        stack.up(config, say=print)
        t_up = time.perf_counter() - t0
        for seed in (0, 1):
            params = [f"data_dir={data_dir}", f"seeds=[{seed}]", *SMALL]
            params.append(f"reports_dir={tmp_path / 'reports'}")
            log = tmp_path / f"run{seed}.log"
            rc = _run_deployment(config, params, log)
            assert rc == 0, log.read_text()[-3000:]
        t_runs = time.perf_counter() - t0 - t_up

        mc = MlflowClient(tracking_uri=config.mlflow_url, registry_uri=config.mlflow_url)
        experiment = mc.get_experiment_by_name("fedcare/diabetes130")
        assert experiment is not None
        runs = mc.search_runs([experiment.experiment_id])
        assert all(r.info.status == "FINISHED" for r in runs)
        stages: dict[str, list[Any]] = {}
        for r in runs:
            stages.setdefault(r.data.tags["fedcare.stage"], []).append(r)
        assert {k: len(v) for k, v in stages.items()} == {"flow": 2, "experiment": 2, "stage2": 6}
        parents = {r.info.run_id: r for r in stages["flow"]}
        flow_run_ids = {r.data.tags["prefect.flow_run_id"] for r in stages["flow"]}
        assert len(flow_run_ids) == 2
        for run in stages["experiment"]:
            parent = parents[run.data.tags["mlflow.parentRunId"]]
            assert run.data.tags["prefect.flow_run_id"] == parent.data.tags["prefect.flow_run_id"]
            assert (
                run.data.tags["fedcare.dataset_sha256"]
                == parent.data.tags["fedcare.dataset_sha256"]
            )
            for objective in ("early_discharge", "readmission", "los"):
                history = mc.get_metric_history(run.info.run_id, f"lambda/{objective}")
                assert sorted(m.step for m in history) == list(range(1, ROUNDS + 1))
                unit = run.data.tags[f"fedcare.metric.{objective}"]
                assert f"test/{objective}.{unit}.pooled" in run.data.metrics
            assert run.data.params["stage1.rounds"] == str(ROUNDS)
            files = {a.path for a in mc.list_artifacts(run.info.run_id)}
            assert {"results.json", "plots", "validation"} <= files
            plots = {a.path for a in mc.list_artifacts(run.info.run_id, "plots")}
            assert plots == {"plots/lambda_trajectory.png", "plots/metrics.png"}
            raw = {a.path for a in mc.list_artifacts(run.info.run_id, "validation/raw")}
            assert "validation/raw/index.html" in raw
        for run in stages["stage2"]:
            assert run.data.tags["mlflow.parentRunId"] in {
                r.info.run_id for r in stages["experiment"]
            }
            assert mc.get_metric_history(run.info.run_id, "val_loss")
        models = mc.search_logged_models(experiment_ids=[experiment.experiment_id])
        names = sorted(m.name for m in models)
        assert names.count("backbone") == 2 and len(names) == 2 + 6
        backbone = "fedcare-diabetes130-fedcare-early_discharge+los+readmission-backbone"
        versions = mc.search_model_versions(f"name='{backbone}'")
        assert len(versions) == 2
        champion = mc.get_model_version_by_alias(backbone, "champion")
        scores = {v.version: float(v.tags["fedcare.score"]) for v in versions}
        assert scores[champion.version] == max(scores.values())

        # The weekly re-training schedule produced scheduled runs reading its data_dir
        # (the server's scheduler fails with SQLAlchemy 2.1, hence the 2.0 pin).
        scheduled = _scheduled_runs(config)
        assert scheduled and all(r.parameters["data_dir"] == str(data_dir) for r in scheduled)
        assert all(r.parameters["verify_checksum"] is False for r in scheduled)
        # ... and the deployment's description names that folder (rendered by `prefect deploy`).
        from prefect.client.orchestration import SyncPrefectClient

        with SyncPrefectClient(config.prefect_api_url) as client:
            deployment = client.read_deployment_by_name("fedcare/full-experiment")
        assert f"data_dir={data_dir}," in (deployment.description or "")
        assert [s.slug for s in deployment.schedules] == ["weekly-retrain"]
        _check_the_schedule_survives_a_redeploy(config)
        print(f"stack up {t_up:.0f} s; two deployment runs {t_runs:.0f} s")
    finally:
        token_file = config.state_dir / "token"
        token = token_file.read_text().strip() if token_file.exists() else ""
        stack.down(config, say=print)
    assert not port_open(config.prefect_port, LOOPBACK)
    assert not port_open(config.mlflow_port, LOOPBACK)
    assert token and marked_processes(TOKEN_ENV, token) == []


def _check_the_schedule_survives_a_redeploy(config: StackConfig) -> None:
    """`fedcare stack schedule` pauses and moves it; `stack up` (prefect deploy) keeps that."""
    from fedcare.cli.main import main
    from fedcare.stack import schedule

    ports = ["--state-dir", str(config.state_dir), "--prefect-port", str(config.prefect_port)]
    assert main(["stack", "schedule", "--pause", "--cron", "30 3 * * 1", *ports]) == 0
    # The schedule keeps re-training over the folder the stack was brought up with.
    over = str(config.data_dir)
    paused = schedule.RetrainSchedule("30 3 * * 1", "UTC", active=False, data_dir=over)
    assert schedule.on_server(config) == paused
    stack.up(config, say=print)  # re-deploys prefect.yaml, which says active at 02:00 Sunday
    assert schedule.on_server(config) == paused == schedule.saved(config)
    assert main(["stack", "schedule", "--resume", *ports]) == 0
    resumed = schedule.RetrainSchedule("30 3 * * 1", "UTC", True, data_dir=over)
    assert schedule.on_server(config) == resumed
    _check_re_training_over_sites_is_kept(config, ports)


def _check_re_training_over_sites_is_kept(config: StackConfig, ports: list[str]) -> None:
    """The schedule re-trains over a coordinator's sites, across a re-deploy, and back again."""
    import json

    from fedcare.cli.main import main
    from fedcare.stack import schedule
    from fedcare_core.sites.schema import read_schema
    from tests.fedcare.cli.test_site_prepare import init_schema

    root = config.state_dir.parent / "coordinator"
    root.mkdir()
    federation = init_schema(root / "federation.json")
    digest = read_schema(federation).digest()
    (root / "ca.crt").write_text("a CA\n")
    sites = {n: {"objectives": ["los"], "schema_digest": digest, "node_id": i}
             for i, n in ((1, "north"), (2, "south"), (3, "east"))}  # fmt: skip
    (root / "sites.json").write_text(json.dumps(sites))
    argv = ["--federation-state-dir", str(root), "--federation-schema", str(federation)]
    assert main(["stack", "schedule", *argv, "--min-sites", "2", *ports]) == 0
    chosen = schedule.on_server(config)
    assert chosen is not None and chosen.federation is not None
    assert chosen.federation["backend"] == "federation" and chosen.federation["min_sites"] == 2
    assert chosen.federation["federation_state_dir"] == str(root.resolve())
    stack.up(config, say=print)  # prefect.yaml's schedule re-trains over the data folder
    assert schedule.on_server(config) == chosen == schedule.saved(config)
    assert main(["stack", "schedule", "--retrain-data-folder", *ports]) == 0
    back = schedule.on_server(config)
    assert back is not None and back.federation is None and back.active
