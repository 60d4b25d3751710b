"""Named sites over the real ClientApp: client ids from the plan's site order, refusals, ``w*``.

Each node here serves a site whose stored data says client 0 (a site cannot know its id before
a coordinator orders the sites); the handshake names the site, the plan's site order gives the
client ids, every ``train`` message assigns the id, and at the end each site keeps ``w*`` with
its id. The run must equal Algorithm 1 on the clients numbered by that order, bit for bit.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np

from fedcare.flower.client_app import build_client_app, node_config_data_path
from fedcare.flower.final_model import FINAL_MODEL_TYPE
from fedcare.flower.flower_options import FlowerConfig
from fedcare.flower.received_model import STAGE1_ARRAYS, STAGE1_DOC
from fedcare.flower.server_app import run_server
from fedcare.flower.workspace import prepare_workspace
from fedcare_core.data.client_store import save_client_data
from tests.fedcare.flower.conftest import LoopbackGrid, node_context
from tests.fedcare.flower.test_strategy import _reference_stage1

#: Site names whose sorted order (the plan's) differs from the clients' cohort order.
NAMES = ("north", "east", "west")
DIGEST = "ab" * 32


def _site_grid(
    small_federation, tmp_path, names=NAMES, digests=None, app=None, grid_cls=LoopbackGrid
):
    """Nodes serving the named sites (stored data saying client 0) on a loopback grid."""
    cfg, fed = small_federation
    ws = prepare_workspace(
        fed, cfg.model, cfg.stage1, cfg.seed, FlowerConfig(workdir_parent=str(tmp_path))
    )
    app = app or build_client_app(node_config_data_path)
    apps = {}
    for k, client in enumerate(fed.clients):
        folder = tmp_path / "sites" / names[k]
        save_client_data(replace(client, client_id=0), folder / "data")
        config = {
            "data-path": str(folder / "data"),
            "site-name": names[k],
            "schema-digest": (digests or {}).get(names[k], DIGEST),
            "stage1-path": str(folder / "stage1"),
        }
        apps[2000 + k] = (app, node_context(2000 + k, config))
    return cfg, fed, ws, grid_cls(apps)


def test_sites_get_the_plan_order_as_ids_and_keep_w_star(small_federation, tmp_path, task_identity):
    cfg, fed, ws, grid = _site_grid(small_federation, tmp_path)
    order = tuple(sorted(NAMES))  # east, north, west: cohort clients 1, 0, 2
    plan = replace(ws.plan, sites=order, schema_digest=DIGEST, broadcast=True, run_name="r1")
    strategy = run_server(grid, plan)
    renumbered = replace(
        fed,
        clients=tuple(
            replace(c, client_id=order.index(NAMES[k])) for k, c in enumerate(fed.clients)
        ),
    )
    state, rounds = _reference_stage1(renumbered, cfg)
    assert [r.lambdas for r in strategy.rounds] == [r.lambdas for r in rounds]
    assert strategy.state.params.tobytes() == state.params.tobytes()
    assert sorted(strategy.clients.values()) == [0, 1, 2]
    assert [m.metadata.message_type for m in grid.sent][-3:] == [FINAL_MODEL_TYPE] * 3
    for name in NAMES:
        kept = tmp_path / "sites" / name / "stage1"
        doc = json.loads((kept / STAGE1_DOC).read_text())
        assert doc["client_id"] == order.index(name) and doc["run_name"] == "r1"
        assert doc["schema_digest"] == DIGEST and doc["planned_rounds"] == cfg.stage1.rounds
        assert [r["lambda"] for r in doc["rounds"]] == [r.lambdas for r in rounds]
        with np.load(kept / STAGE1_ARRAYS) as npz:
            assert npz["params"].tobytes() == state.params.tobytes()
    assert not any("final model" in n for n in strategy.notes)  # delivered to every site


def test_a_site_not_in_the_plan_or_of_another_schema_is_refused(
    small_federation, tmp_path, task_identity
):
    digests = {"west": "cd" * 32}
    _, _, ws, grid = _site_grid(small_federation, tmp_path, digests=digests)
    plan = replace(
        ws.plan,
        sites=("east", "west"),  # north is not a site of this run; west has another schema
        num_clients=1,
        schema_digest=DIGEST,
        broadcast=True,
        startup_timeout_s=0.3,
    )
    strategy = run_server(grid, plan)
    assert all(r.participants == (0,) for r in strategy.rounds)
    notes = " | ".join(strategy.notes)
    assert "names site 'north', which is not a site of this run" in notes
    assert "site 'west' was prepared for another federation schema" in notes
    assert not (tmp_path / "sites" / "north" / "stage1").exists()
    assert (tmp_path / "sites" / "east" / "stage1" / STAGE1_DOC).exists()
    train = [m for m in grid.sent if m.metadata.message_type == "train"]
    assert {m.metadata.dst_node_id for m in train} == {2001}  # east only
