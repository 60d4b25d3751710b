"""``fedcare site personalise``: Stage 2 at a site from the broadcast ``w*``, its own store.

Sites are prepared as in :mod:`tests.fedcare.cli.test_site_prepare`; personalisation is checked
against ``fedcare run --sites`` over the same sites (the broadcast ``w*`` simulated by an
in-process Stage 1 stored in each site folder).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from fedcare.cli.main import main
from fedcare.sites.site_folder import SiteFolder
from fedcare_core.sites.schema import read_schema
from tests.fedcare.cli.test_site_prepare import (
    IDS,
    SITES,
    init_schema,
    leaked_ids,
    mode,
    one_error,
    personalise,
    prepare,
    synthetic_site,
)


@pytest.fixture(scope="module")
def federation(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """Three prepared sites, ``fedcare run --sites`` over them, and ``w*`` stored at each."""
    from fedcare.flower.received_model import store_final_model
    from fedcare.flower.results import round_to_dict
    from fedcare.flower.site_messages import FinalModel
    from fedcare_core.sites.client import federation_of_sites
    from fedcare_core.stage1.loop import run_stage1

    root = tmp_path_factory.mktemp("federation")
    schema_path = init_schema(root / "federation.json")
    entries, folders = [], {}
    for offset, (name, objectives) in enumerate(SITES.items()):
        data = synthetic_site(root / "exports" / f"{name}.csv", offset=offset)
        folders[name] = root / "sites" / name
        assert prepare(schema_path, data, folders[name], ",".join(objectives)) == 0
        entries.append({"data": str(data), "objectives": objectives, "name": name})
    (root / "sites.json").write_text(json.dumps(entries))
    argv = ["run", "--sites", str(root / "sites.json"), "--schema", str(schema_path)]
    assert main([*argv, "--rounds", "2", "--quiet", "--out", str(root / "run.json")]) == 0

    schema = read_schema(schema_path)
    sites = {name: SiteFolder.open(path) for name, path in folders.items()}
    fed = federation_of_sites(schema, [(name, site.client()) for name, site in sites.items()])
    config = schema.run_config(seed=0, clients=len(sites), rounds=2)
    stage1 = run_stage1(fed, config.model, config.stage1, config.seed)
    for client_id, name in enumerate(sorted(sites)):
        final = FinalModel(
            client_id=client_id,
            seed=0,
            schema_digest=schema.digest(),
            objectives=stage1.objectives,
            common_width=fed.common_width,
            rounds=[round_to_dict(r) for r in stage1.rounds],
            planned_rounds=2,
            clients=len(sites),
            converged=stage1.converged,
            run_name="fedcare-K3-T2-seed0",
            params=stage1.params,
            buffers=stage1.buffers,
        )
        store_final_model(sites[name].stage1_dir, final)
    run = json.loads((root / "run.json").read_text())
    return SimpleNamespace(root=root, schema=schema, folders=folders, run=run)


def _client_values(doc: dict[str, Any], client: int) -> dict[str, float | None]:
    return {
        name: c["value"]
        for name, rep in doc["objectives"].items()
        for c in rep["clients"]
        if c["client"] == client
    }


def test_personalise_gives_each_site_what_the_in_process_run_gives_it(
    federation: SimpleNamespace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = federation.run
    for client_id, name in enumerate(sorted(SITES)):
        out = tmp_path / f"{name}.json"
        bars = name == "hospital-c"  # one site with its progress bar, the others --quiet
        assert personalise(federation.folders[name], out, *([] if bars else ["--quiet"])) == 0
        captured = capsys.readouterr()
        doc = json.loads(out.read_text())
        mine, theirs = _client_values(doc, client_id), _client_values(run, client_id)
        assert sorted(mine) == sorted(SITES[name]) == sorted(theirs)
        assert all(v is not None for v in mine.values())
        assert mine == pytest.approx(theirs, abs=1e-6)
        assert doc["site"] == {
            "name": name,
            "client_id": client_id,
            "run_name": "fedcare-K3-T2-seed0",
            "schema_digest": federation.schema.digest(),
            "objectives": list(SITES[name]),
        }
        assert sorted(doc["objectives"]) == sorted(SITES[name])  # the site's own only
        assert doc["stage1"]["backend"] == "federation" and doc["config"] == run["config"]
        assert len(doc["rounds"]) == len(run["rounds"]) == 2
        for got, want in zip(doc["rounds"], run["rounds"], strict=True):
            assert got["lambda"] == pytest.approx(want["lambda"], abs=1e-12)
        assert [c["client"] for c in doc["clients"]] == [client_id]
        assert "fedcare on diabetes130: 1 client, 2 rounds" in captured.out
        assert ("Stage 2 (personalisation)" in captured.err) == bars and mode(out) == 0o600
        assert leaked_ids([out]) == [] and not IDS.search(captured.out.encode())


def test_personalise_without_a_broadcast_is_a_clear_refusal(
    federation: SimpleNamespace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site = tmp_path / "hospital-a"
    shutil.copytree(federation.folders["hospital-a"], site)
    shutil.rmtree(site / "stage1")
    out = tmp_path / "result.json"
    assert personalise(site, out) == 2
    assert one_error(capsys) == (
        f"fedcare: error: --site {site}: no Stage 1 model yet; it arrives at the end of the "
        "coordinator's `fedcare federation run` while `fedcare site join` runs\n"
    )
    assert personalise(tmp_path, out) == 2
    assert f"--site {tmp_path}: not a site folder (no site.json)" in one_error(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hospital-a"]


@pytest.mark.filterwarnings("ignore:No complete tensor found:UserWarning")
def test_personalise_tracks_the_site_in_its_own_store(
    federation: SimpleNamespace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    out = tmp_path / "result.json"
    assert personalise(federation.folders["hospital-b"], out, "--quiet", "--tracking-uri", uri) == 0
    err = capsys.readouterr().err
    # Named by what it predicts (hospital-b: readmission and los, sorted) and whom it serves.
    name = "fedcare-diabetes130-fedcare-los+readmission-hospital-b"
    assert f"registered {name} version 1 (champion)" in err
    mc = MlflowClient(uri, registry_uri=uri)  # not a registry an earlier test pointed at
    models = mc.search_registered_models()
    assert [m.name for m in models] == [name]  # no backbone: w* is the coordinator's
    assert models[0].tags["fedcare.site"] == "hospital-b"
    assert models[0].tags["fedcare.objectives"] == "los,readmission"
    version = mc.get_model_version(name, "1")
    assert version.tags["fedcare.site"] == "hospital-b" and version.tags["fedcare.client"] == "1"
    runs = mc.search_runs([e.experiment_id for e in mc.search_experiments()])
    assert {r.data.tags["fedcare.stage"] for r in runs} == {"experiment", "stage2"}
    for r in runs:
        assert r.data.tags["fedcare.backend"] == "federation"
        assert r.data.tags["fedcare.entry"] == "fedcare site personalise"
        assert r.data.tags["fedcare.site"] == "hospital-b"
    assert leaked_ids([tmp_path]) == [] and not IDS.search(err.encode())


def test_a_site_name_that_would_take_another_models_name_is_refused_before_work(
    federation: SimpleNamespace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site = tmp_path / "site"
    shutil.copytree(federation.folders["hospital-a"], site)
    for name in ("site.json", "site-card.json"):  # a site prepared under that name
        info = json.loads((site / name).read_text())
        (site / name).write_text(json.dumps(info | {"name": "client0"}))
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert personalise(site, tmp_path / "r.json", "--tracking-uri", uri) == 2
    assert "site name 'client0' would register its model as another model's name" in (
        one_error(capsys)
    )
    assert not (tmp_path / "r.json").exists()
    assert registered_names(uri) == []


def registered_names(uri: str) -> list[str]:
    from mlflow.tracking import MlflowClient

    # The registry named too: MLflow keeps the last store's in MLFLOW_REGISTRY_URI.
    return [m.name for m in MlflowClient(uri, registry_uri=uri).search_registered_models()]


def _nan_params(site: Path) -> None:

    path = site / "stage1" / "stage1.npz"
    with np.load(path) as npz:
        arrays = dict(npz)
    arrays["params"][:3] = np.nan
    np.savez(path, **arrays)


def _edit_json(relative: str, **changes: Any) -> Any:
    def edit(site: Path) -> None:
        path = site / relative
        path.write_text(json.dumps(json.loads(path.read_text()) | changes))

    return edit


@pytest.mark.parametrize(
    ("edit", "part"),
    [
        (_nan_params, "stage1.npz: array 'params' holds 3 NaN or infinite value(s)"),
        (_edit_json("stage1/stage1.json", client_id=-3), "stage1.json: field 'client_id'"),
        (_edit_json("stage1/stage1.json", objectives=["los"]), "field 'rounds[0].lambda' must"),
        (_edit_json("stage1/stage1.json", common_width=10), "field 'common_width'"),
        (_edit_json("site.json", name="../../x"), "site.json: field 'name': site name '../../x'"),
        (_edit_json("site.json", source_sha256=None), "site.json: field 'source_sha256'"),
    ],
)
def test_personalise_refuses_an_edited_site_folder_or_w_star_and_writes_nothing(
    federation: SimpleNamespace,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    edit: Any,
    part: str,
) -> None:
    site = tmp_path / "hospital-b"
    shutil.copytree(federation.folders["hospital-b"], site)
    edit(site)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert personalise(site, tmp_path / "result.json", "--tracking-uri", uri) == 2
    assert part in one_error(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hospital-b"]  # no result, no store


@pytest.mark.filterwarnings("ignore:No complete tensor found:UserWarning")
def test_personalise_logs_to_a_store_made_before_it(
    federation: SimpleNamespace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import sqlite3

    sqlite3.connect(tmp_path / "mlflow.db").close()  # `sqlite3 mlflow.db ''`: an empty store
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    out = tmp_path / "result.json"
    assert personalise(federation.folders["hospital-c"], out, "--quiet", "--tracking-uri", uri) == 0
    assert out.exists() and registered_names(uri) == [
        "fedcare-diabetes130-fedcare-early_discharge+los-hospital-c"
    ]
    assert "Creating initial MLflow database tables" not in capsys.readouterr().err


def test_a_re_trained_model_is_the_challenger_and_promoted_within_the_margin(
    federation: SimpleNamespace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site = federation.folders["hospital-b"]
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    args = ("--quiet", "--tracking-uri", uri, "--promotion-margin", "0")
    assert personalise(site, tmp_path / "r1.json", *args) == 0
    assert "version 1 (challenger): no champion yet" in capsys.readouterr().out
    assert personalise(site, tmp_path / "r2.json", *args) == 0  # the same w*: the same score
    out = capsys.readouterr().out
    assert "version 2 (challenger): validation" in out and "within 0: promoted" in out
    assert personalise(site, tmp_path / "r3.json", "--promotion-margin", "0.01") == 2
    assert "--promotion-margin needs --tracking-uri" in capsys.readouterr().err
    assert not (tmp_path / "r3.json").exists()
