"""fedxgb in a real federation of sites (the README's commands) against ``fedcare run --sites``.

Three hospital files from the real Diabetes 130 file (2,500 encounters each); a schema whose
algorithm is ``fedxgb`` (``fedcare federation init --algorithm fedxgb``); each site prepared
in its own folder and joined as its own process; ``fedcare federation run`` boosts for 2
rounds over Flower (TLS, node authentication) and broadcasts the chosen trees; each site
stacks its own trees at home (``fedcare site personalise``). Trees are deterministic, so every
site's metrics must equal the in-process run over the same files, schema and seed exactly.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fedcare.procs.ports import free_port
from tests.e2e.test_multisite_federation import (
    _federation_processes,
    fedcare,
    join,
    prepare_sites,
    stop,
)

pytestmark = [pytest.mark.slow, pytest.mark.realdata]
ROUNDS = "2"


def test_three_sites_boost_the_in_process_trees(data_dir: Path, tmp_path: Path) -> None:
    root = tmp_path
    # 2,500 encounters a hospital: the trees' equality, not their quality, is under test.
    schema, sites = prepare_sites(root, data_dir, "--algorithm", "fedxgb", encounters=2500)
    state, port = root / "state", free_port()
    fedcare("federation", "start", "--state-dir", str(state), "--port", str(port))
    try:
        for folder in sites.values():
            fedcare("federation", "register", "--state-dir", str(state),
                    "--site", str(folder / "site-card.json"))  # fmt: skip
        joins = {
            name: join(folder, port, state / "ca.crt", root / f"join-{name}.log")
            for name, folder in sites.items()
        }
        try:
            fedcare("federation", "run", "--state-dir", str(state), "--schema", str(schema),
                    "--min-sites", "3", "--rounds", ROUNDS, "--seed", "0",
                    "--out", str(root / "stage1.json"), "--quiet", "--name", "trees")  # fmt: skip
        finally:
            codes = {name: stop(proc) for name, proc in joins.items()}
        assert codes == {name: 130 for name in joins}, codes
        assert not _federation_processes(root)
    finally:
        fedcare("federation", "stop", "--state-dir", str(state), check=False)
    doc = json.loads((root / "stage1.json").read_text())
    assert doc["algorithm"] == "fedxgb" and doc["rounds_run"] == int(ROUNDS)
    with np.load(state / "runs" / "trees" / "result" / "stage1.npz") as arrays:
        assert arrays["params"].dtype == np.uint8  # the trees' bytes, not a network's weights
    local = root / "local.json"
    fedcare("run", "--sites", str(root / "hospitals" / "sites.json"), "--schema", str(schema),
            "--rounds", ROUNDS, "--seed", "0", "--out", str(local), "--quiet")  # fmt: skip
    expected = json.loads(local.read_text())
    assert [r["loss"] for r in doc["rounds"]] == [r["loss"] for r in expected["rounds"]]
    for client_id, (name, folder) in enumerate(sorted(sites.items())):
        result = root / f"result-{name}.json"
        fedcare("site", "personalise", "--site", str(folder), "--out", str(result), "--quiet")
        site_doc = json.loads(result.read_text())
        assert site_doc["algorithm"] == "fedxgb" and site_doc["site"]["client_id"] == client_id
        for objective, report in site_doc["objectives"].items():
            (mine,) = report["clients"]
            (theirs,) = [
                c for c in expected["objectives"][objective]["clients"] if c["client"] == client_id
            ]
            assert mine["value"] == theirs["value"], (name, objective)
