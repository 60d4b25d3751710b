"""Secure aggregation over named sites: the handshake's ids, refusals and ``w*``, under SecAgg+.

As in ``test_site_protocol``, each site's stored data says client 0; the handshake names the
site, the plan's site order gives the ids, and every SecAgg+ instruction assigns the id. The
securely summed run must give the λ* of Algorithm 1 on the clients numbered by that order, and
every site keeps the broadcast ``w*``.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np

from fedcare.flower.client_app import node_config_data_path
from fedcare.flower.final_model import FINAL_MODEL_TYPE
from fedcare.flower.received_model import STAGE1_ARRAYS, STAGE1_DOC
from fedcare.flower.secagg_client import build_secagg_client_app
from fedcare.flower.secagg_server import run_secure_server
from tests.fedcare.flower.conftest import node_context
from tests.fedcare.flower.test_secagg import LAMBDA_TOL, SecureGrid
from tests.fedcare.flower.test_site_protocol import DIGEST, NAMES, _site_grid
from tests.fedcare.flower.test_strategy import _reference_stage1


def _secure_sites(small_federation, tmp_path, digests=None):
    app = build_secagg_client_app(node_config_data_path)
    cfg, fed, ws, grid = _site_grid(
        small_federation, tmp_path, digests=digests, app=app, grid_cls=SecureGrid
    )
    plan = replace(
        ws.plan,
        stage1=replace(ws.plan.stage1, secagg=True),
        schema_digest=DIGEST,
        broadcast=True,
        run_name="secure-sites",
        round_timeout_s=1.0,
        startup_timeout_s=1.0,
    )
    return cfg, fed, plan, grid


def test_secure_sites_get_the_plan_order_as_ids_and_keep_w_star(
    small_federation, tmp_path, task_identity
):
    cfg, fed, plan, grid = _secure_sites(small_federation, tmp_path)
    order = tuple(sorted(NAMES))  # east, north, west: cohort clients 1, 0, 2
    strategy = run_secure_server(grid, node_context(0, {}), replace(plan, sites=order))
    renumbered = replace(
        fed,
        clients=tuple(
            replace(c, client_id=order.index(NAMES[k])) for k, c in enumerate(fed.clients)
        ),
    )
    _, rounds = _reference_stage1(renumbered, cfg)
    assert len(strategy.rounds) == len(rounds)
    for got, want in zip(strategy.rounds, rounds, strict=True):
        assert got.participants == (0, 1, 2)
        for name, value in want.lambdas.items():
            assert abs(got.lambdas[name] - value) < LAMBDA_TOL
    assert [m.metadata.message_type for m in grid.sent][-3:] == [FINAL_MODEL_TYPE] * 3
    for name in NAMES:
        kept = tmp_path / "sites" / name / "stage1"
        doc = json.loads((kept / STAGE1_DOC).read_text())
        assert doc["client_id"] == order.index(name) and doc["run_name"] == "secure-sites"
        with np.load(kept / STAGE1_ARRAYS) as npz:
            assert npz["params"].tobytes() == strategy.state.params.tobytes()
    assert not any("final model" in n for n in strategy.notes)


def test_a_secure_run_refuses_a_site_of_another_schema_and_sums_the_others(
    small_federation, tmp_path, task_identity
):
    _, _, plan, grid = _secure_sites(small_federation, tmp_path, digests={"west": "cd" * 32})
    plan = replace(plan, sites=("east", "north", "west"), num_clients=2)
    strategy = run_secure_server(grid, node_context(0, {}), plan)
    assert strategy.rounds and all(r.participants == (0, 1) for r in strategy.rounds)
    assert any(
        "site 'west' was prepared for another federation schema" in n for n in strategy.notes
    )
    west = 2000 + NAMES.index("west")
    train = [m for m in grid.sent if m.metadata.message_type.startswith("train")]
    assert train and west not in {m.metadata.dst_node_id for m in train}
    assert not (tmp_path / "sites" / "west" / "stage1").exists()
