"""A grid over sites whose feature spaces truly differ: the cells are ``fedcare run --sites``.

Three hospitals of ``examples/hospital`` (own private columns, a column map): the comparison
and the ablation run over them through the grid service, each cell's document equal to the
single run's (``fedcare run --sites --algorithm A --seed S --rounds T``), and every option the
sites decide is refused, by both entries, before anything is written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fedcare.app.grid import (
    GridRequest,
    check_grid_request,
    checked_data,
    cli_spelling,
    flow_spelling,
)
from fedcare.app.grid_jobs import run_cells
from fedcare.cli.main import main
from fedcare_core.errors import ConfigError, DataError
from tests.fedcare.sites.hospital_sites import OWN_COLUMNS, write_hospital_sites

#: A tiny schema: 2 rounds, 2 epochs of Stage 2 and of the bounds.
_INIT = ["--rounds", "2", "--stage2-epochs", "2", "--set", "baselines.bound_epochs=2"]


@pytest.fixture(scope="module")
def hospitals(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """``sites.json`` and ``fed.json`` of the three hospitals."""
    return write_hospital_sites(tmp_path_factory.mktemp("hospital-sites"), init=_INIT)


def _request(name: str, hospitals: tuple[Path, Path], out: Path, **options: Any) -> GridRequest:
    sites, schema = hospitals
    return GridRequest(
        name, {"sites": str(sites), "schema": str(schema), "out": str(out)} | options
    )


def _without_timing(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k != "timing"}


def test_each_cell_is_the_single_run_over_the_same_sites(
    hospitals: tuple[Path, Path], tmp_path: Path
) -> None:
    methods = ["fedcare", "fedavg", "local"]
    request = _request("comparison", hospitals, tmp_path / "grid", seeds=1, algorithms=methods)
    prepared = check_grid_request(request)
    assert not (tmp_path / "grid").exists()  # checking writes nothing
    assert prepared.dataset == "riverside" and prepared.base.data.clients == 3
    assert "-sites-" in prepared.cells_dir.name  # apart from a dataset grid's on the same base
    cells = prepared.cells["comparison"]
    assert [(c.algorithm, c.clients, c.seed) for c in cells] == [(m, 3, 0) for m in methods]
    checked_data(prepared)
    outcomes = run_cells(cells, prepared.base, prepared.spec, prepared.cells_dir)
    sites, schema = hospitals
    declared = {f for names in OWN_COLUMNS.values() for f in names}
    for outcome in outcomes:
        cell = json.loads(outcome.path.read_text())
        single = tmp_path / f"{outcome.cell.algorithm}.json"
        argv = ["run", "--sites", str(sites), "--schema", str(schema), "--seed", "0"]
        argv += ["--rounds", "2", "--algorithm", outcome.cell.algorithm, "--out", str(single)]
        assert main([*argv, "--quiet"]) == 0
        assert _without_timing(cell) == _without_timing(json.loads(single.read_text()))
        # the union view pads what a site lacks; each site keeps its own columns
        for client, name in zip(cell["clients"], sorted(OWN_COLUMNS), strict=True):
            assert [f for f in client["private_features"] if f in declared] == OWN_COLUMNS[name]


def test_the_ablation_runs_its_variants_over_the_sites(
    hospitals: tuple[Path, Path], tmp_path: Path
) -> None:
    variants = ["paper", "solver-slsqp"]
    request = _request("ablation", hospitals, tmp_path, seeds=1, variants=variants, rounds=1)
    prepared = check_grid_request(request)
    assert prepared.base.stage1.rounds == 1
    cells = prepared.cells["ablation"]
    assert {(c.variant, c.algorithm) for c in cells} == {
        (v, a) for v in variants for a in ("fedcare", "fedcare-b")
    }
    checked_data(prepared)
    outcomes = run_cells(cells, prepared.base, prepared.spec, prepared.cells_dir)
    docs = {(o.cell.variant, o.cell.algorithm): json.loads(o.path.read_text()) for o in outcomes}
    assert docs["solver-slsqp", "fedcare"]["config"]["stage1"]["solver"] == "slsqp"
    assert docs["paper", "fedcare"]["rounds"] == docs["paper", "fedcare-b"]["rounds"]  # shared
    assert all(len(d["clients"]) == 3 and len(d["rounds"]) == 1 for d in docs.values())


def test_other_sites_or_a_changed_declaration_keep_their_cells_apart(
    hospitals: tuple[Path, Path], tmp_path: Path
) -> None:
    sites, schema = hospitals
    first = check_grid_request(_request("comparison", hospitals, tmp_path)).cells_dir
    entries = json.loads(sites.read_text())
    del entries[1]["private"]  # south without its own columns
    other = sites.with_name("sites-plain.json")
    other.write_text(json.dumps(entries))
    second = check_grid_request(_request("comparison", (other, schema), tmp_path)).cells_dir
    assert first.parent == second.parent and first != second


REFUSED: list[tuple[str, dict[str, Any]]] = [
    ("clients", {"clients": 4}),
    ("dataset", {"dataset": "mimic3"}),
    ("data_dir", {"data_dir": "/data"}),
    ("features", {"features": "admission"}),
    ("max_patients", {"max_patients": 100}),
    ("stage2_epochs", {"stage2_epochs": 3}),
    ("unseen_categories", {"unseen_categories": "other"}),
    ("verify_checksum", {"verify_checksum": False}),
]


@pytest.mark.parametrize(("option", "given"), REFUSED)
def test_what_the_sites_decide_is_refused_by_both_entries(
    hospitals: tuple[Path, Path], tmp_path: Path, option: str, given: dict[str, Any]
) -> None:
    from fedcare.app.grid_options import OPTIONS_BY_NAME

    for spell in (cli_spelling, flow_spelling):
        request = _request("comparison", hospitals, tmp_path / "out", **given)
        with pytest.raises(ConfigError) as error:
            check_grid_request(request, spell)
        message = str(error.value)
        assert message.startswith(f"{spell(OPTIONS_BY_NAME[option])}: decided by the sites")
        assert "\n" not in message
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("clients", "the clients experiment sweeps the client count K"),
        ("disparity", "the disparity experiment sweeps ρ"),
        ("privacy", "the privacy experiment"),
        ("selection", "the selection experiment"),
        ("recommended", "the recommended experiment"),
        ("programme", "the programme's clients experiment"),
    ],
)
def test_experiments_that_vary_what_the_sites_decide_refuse_them(
    hospitals: tuple[Path, Path], tmp_path: Path, name: str, words: str
) -> None:
    with pytest.raises(ConfigError, match=r"^--sites: a grid over sites runs comparison") as e:
        check_grid_request(_request(name, hospitals, tmp_path / "out"))
    assert words in str(e.value)


def test_sites_and_schema_go_together_and_are_read_before_any_site_file(
    hospitals: tuple[Path, Path], tmp_path: Path
) -> None:
    sites, schema = hospitals
    for options in ({"sites": str(sites)}, {"schema": str(schema)}):
        with pytest.raises(ConfigError, match="--sites and --schema go together"):
            check_grid_request(GridRequest("ablation", options))
        with pytest.raises(ConfigError, match="sites and federation_schema go together"):
            check_grid_request(GridRequest("ablation", options), flow_spelling)
    missing = {"sites": str(tmp_path / "nope.json"), "schema": str(schema)}
    with pytest.raises(ConfigError, match=r"^sites .*nope.json: no such file"):
        check_grid_request(GridRequest("comparison", missing), flow_spelling)


def test_a_site_too_small_for_a_seeds_split_is_refused_by_the_gate(tmp_path: Path) -> None:
    sites, schema = write_hospital_sites(tmp_path, rows=60, init=_INIT)
    prepared = check_grid_request(_request("comparison", (sites, schema), tmp_path / "out"))
    with pytest.raises(DataError, match="site 'south' has no positive label"):
        checked_data(prepared)  # the split of seed 0: before any cell runs
    assert not (tmp_path / "out").exists()
