"""A real three-site federation on loopback where the sites declare different private columns.

The synthetic hospital extract (``examples/hospital``, seeded, never a patient's) is split into
three hospitals' exports that differ as real ones do: ``north`` exports the federation's
columns only, ``south`` also records a maximum lactate and a clinical frailty score (declared
by ``site2-private.yaml``), ``east`` names and codes some columns its own way (``site3-map.yaml``)
and records the admitting ward (``site3-private.yaml``). Each runs ``fedcare site prepare`` with
its own declarations, the coordinator starts a TLS SuperLink, registers the cards, runs Stage 1
(logged to its MLflow store), each site personalises at home (its own MLflow store) and scores
raw rows of its own export with its registered model (``fedcare predict``). Then the
coordinator's state folder, its MLflow store, every log and the Stage 1 document are searched
for the sites' private column names (and east's own column names): none may be there.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from examples.hospital.make_extract import make_extract, site_exports
from fedcare.procs.ports import free_port
from tests.e2e.test_multisite_federation import fedcare, join, stop

pytestmark = [pytest.mark.slow]
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "hospital"
#: What no party but the site that declared it may ever name.
PRIVATE_NAMES = ("LACTATE_MAX", "CLIN_FRAILTY_SCALE", "ADMIT_WARD", "PAT_ID")
SITES = {
    "north": ("site1", "mortality", ()),
    "south": ("site2", "readmission", ("--private", "site2-private.yaml")),
    "east": (
        "site3",
        "los",
        ("--private", "site3-private.yaml", "--map", "site3-map.yaml"),
    ),
}


@pytest.fixture(scope="module")
def network(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    root = tmp_path_factory.mktemp("private-features")
    for name in ("definition.yaml", "site2-private.yaml", "site3-private.yaml", "site3-map.yaml"):
        shutil.copy(EXAMPLE / name, root / name)
    for site, export in site_exports(make_extract(4500, seed=11), 3, 11).items():
        (root / site).mkdir()
        export.to_csv(root / site / "encounters.csv", index=False)
    coordinator = root / "coordinator"
    coordinator.mkdir()
    schema = coordinator / "federation.json"
    fedcare("federation", "init", "--dataset", str(root / "definition.yaml"), "--out", str(schema))
    folders = {}
    for name, (export, objective, declared) in SITES.items():
        folder = root / name
        args = [a if not a.endswith(".yaml") else str(root / a) for a in declared]
        fedcare("site", "prepare", "--schema", str(schema), "--data",
                str(root / export / "encounters.csv"), "--objectives", objective,
                "--out", str(folder), *args)  # fmt: skip
        folders[name] = folder
    state, port = coordinator / "state", free_port()
    fedcare("federation", "start", "--state-dir", str(state), "--port", str(port))
    try:
        for folder in folders.values():
            card = folder / "site-card.json"
            fedcare("federation", "register", "--state-dir", str(state), "--site", str(card))
        yield {"root": root, "coordinator": coordinator, "schema": schema, "state": state,
               "port": port, "sites": folders}  # fmt: skip
    finally:
        fedcare("federation", "stop", "--state-dir", str(state), check=False)


def test_private_columns_stay_at_their_site(network: dict) -> None:
    root, coordinator = network["root"], network["coordinator"]
    state, port, sites = network["state"], network["port"], network["sites"]
    joins = {
        n: join(f, port, state / "ca.crt", coordinator / f"join-{n}.log") for n, f in sites.items()
    }
    stage1 = coordinator / "stage1.json"
    uri = f"sqlite:///{coordinator / 'mlflow' / 'mlflow.db'}"
    try:
        fedcare("federation", "run", "--state-dir", str(state), "--schema",
                str(network["schema"]), "--min-sites", "3", "--rounds", "3", "--seed", "0",
                "--out", str(stage1), "--quiet", "--tracking-uri", uri)  # fmt: skip
    finally:
        codes = {n: stop(p) for n, p in joins.items()}
    assert codes == {n: 130 for n in sites}, codes
    doc = json.loads(stage1.read_text())
    assert doc["rounds_run"] == 3 and [s["name"] for s in doc["sites"]] == sorted(sites)

    for name, folder in sites.items():
        export, objective, _ = SITES[name]
        site_uri = f"sqlite:///{folder / 'mlflow' / 'mlflow.db'}"
        result = folder / "result.json"
        fedcare("site", "personalise", "--site", str(folder), "--out", str(result), "--quiet",
                "--tracking-uri", site_uri)  # fmt: skip
        own = json.loads(result.read_text())
        (client,) = own["clients"]
        declared = {"north": set(), "south": {"LACTATE_MAX", "CLIN_FRAILTY_SCALE"},
                    "east": {"ADMIT_WARD"}}[name]  # fmt: skip
        assert declared <= set(client["private_features"])
        assert not (set(PRIVATE_NAMES) - declared) & set(client["private_features"])
        rows = pd.read_csv(root / export / "encounters.csv", dtype=str, keep_default_na=False)
        rows.head(30).to_csv(folder / "new.csv", index=False)
        scores = folder / "scores.csv"
        model = f"models:/fedcare-riverside-fedcare-{objective}-{name}@champion"
        fedcare("predict", "--model", model, "--data", str(folder / "new.csv"), "--out",
                str(scores), "--tracking-uri", site_uri)  # fmt: skip
        scored = pd.read_csv(scores)
        assert len(scored) == 30 and scored.iloc[:, -1].notna().all()
        identifier = "PAT_ID" if name == "east" else "MRN"  # east's own name, kept for joining
        assert identifier in scored.columns

    # Nothing the coordinator holds or logged names a site's private (or own) column.
    found = {
        str(path.relative_to(coordinator)): [n for n in PRIVATE_NAMES if n.encode() in data]
        for path in coordinator.rglob("*")
        if path.is_file() and (data := path.read_bytes())
    }
    assert not {k: v for k, v in found.items() if v}, found
    assert any(p.endswith(".db") for p in found) and "stage1.json" in found
    for name, folder in sites.items():
        card = (folder / "site-card.json").read_text()
        assert not [n for n in PRIVATE_NAMES if n in card], name
