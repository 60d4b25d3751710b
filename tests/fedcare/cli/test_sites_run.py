"""``fedcare run --sites``: every refusal comes before any file of a site is read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fedcare.cli.main import main
from fedcare_core.config import ExperimentConfig
from fedcare_core.sites.schema import schema_for


@pytest.fixture
def schema(tmp_path: Path) -> Path:
    return schema_for(ExperimentConfig()).write(tmp_path / "federation.json")


def _sites(tmp_path: Path, entries: object) -> Path:
    for name in ("a.csv", "b.csv"):
        (tmp_path / name).write_text("not read before the checks\n")
    path = tmp_path / "sites.json"
    path.write_text(json.dumps(entries))
    return path


def _run(capsys, *argv: str) -> str:
    assert main(["run", *argv, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    return err


GOOD = [{"data": "a.csv", "objectives": ["los"]}, {"data": "b.csv", "objectives": ["los"]}]


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ({"data": "a.csv"}, "expected a non-empty JSON list"),
        ([], "expected a non-empty JSON list"),
        ([{"data": "a.csv"}], "site 0: keys are 'data', 'objectives'"),
        ([{"data": "a.csv", "objectives": ["los"], "extra": 1}], "site 0: keys are"),
        ([GOOD[0], {"data": "absent.csv", "objectives": ["los"]}], "absent.csv: no such file"),
        ([GOOD[0], {"data": "b.csv", "objectives": ["mortality"]}], "site 1 objectives"),
        ([GOOD[0], {"data": "b.csv", "objectives": "los"}], "must be a list of names"),
        ([GOOD[0], {**GOOD[1], "name": "a"}], "two sites are named 'a'"),
        ([GOOD[0], {**GOOD[1], "name": "../x"}], "site name '../x'"),
    ],
)
def test_a_bad_sites_list_is_refused_naming_the_file_and_entry(
    tmp_path, schema, capsys, entries, message
):
    sites = _sites(tmp_path, entries)
    err = _run(capsys, "--sites", str(sites), "--schema", str(schema))
    assert message in err and str(sites) in err


@pytest.mark.parametrize(
    "extra",
    [
        ["--clients", "4"], ["--rho", "0.2"], ["--local-steps", "3"], ["--no-verify"],
        # once silently ignored: the schema's configuration has no DP, and --set any setting
        ["--dp-epsilon", "3"], ["--set", "stage1.epsilon=0.1"],
    ],
)  # fmt: skip
def test_options_the_schema_decides_are_refused(tmp_path, schema, capsys, extra):
    sites = _sites(tmp_path, GOOD)
    err = _run(capsys, "--sites", str(sites), "--schema", str(schema), *extra)
    assert f"decides {extra[0]}" in err


def test_sites_and_schema_go_together(tmp_path, schema, capsys):
    sites = _sites(tmp_path, GOOD)
    assert "go together" in _run(capsys, "--sites", str(sites))
    assert "go together" in _run(capsys, "--schema", str(schema))


def test_a_schema_that_cannot_be_honoured_is_refused(tmp_path, capsys):
    bad = tmp_path / "federation.json"
    bad.write_text(json.dumps({"format": "something else"}))
    err = _run(capsys, "--sites", str(_sites(tmp_path, GOOD)), "--schema", str(bad))
    assert "field 'format' must be" in err and str(bad) in err


def test_a_site_file_that_fails_its_checks_is_named(tmp_path, schema, capsys):
    err = _run(capsys, "--sites", str(_sites(tmp_path, GOOD)), "--schema", str(schema))
    assert "a.csv" in err  # the first site's file, read through the loader's checks


def test_secagg_with_sites_is_refused_in_process_before_any_site_is_read(tmp_path, schema, capsys):
    sites = _sites(tmp_path, GOOD)
    err = _run(capsys, "--sites", str(sites), "--schema", str(schema), "--secagg")
    assert "--secagg" in err and "flower-deployment or flower-sim" in err


def test_secagg_is_the_one_stage1_setting_a_sites_run_adds_to_the_schema(schema):
    from fedcare_core.sites.schema import read_schema

    plain = read_schema(schema).run_config(seed=0, clients=2)
    secure = read_schema(schema).run_config(seed=0, clients=2, secagg=True)
    assert secure.stage1.secagg and not plain.stage1.secagg
    assert secure.stage1.rounds == plain.stage1.rounds and secure.model == plain.model


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ([GOOD[0], {**GOOD[1], "name": 5}], "site 1, 'name': site name 5 (a int)"),
        ([GOOD[0], {**GOOD[1], "data": 7}], "site 1: 'data' must be a file or folder path"),
        ([GOOD[0]], "a federation needs at least 2 sites, got 1"),
    ],
)
def test_a_sites_list_of_the_wrong_types_is_refused(tmp_path, schema, capsys, entries, message):
    sites = _sites(tmp_path, entries)
    err = _run(capsys, "--sites", str(sites), "--schema", str(schema))
    assert message in err and str(sites) in err


@pytest.mark.parametrize(
    ("extra", "message"),
    [(["--rounds", "0"], "--rounds must lie in"), (["--seed", "-5"], "--seed must lie in")],
)
def test_the_options_a_sites_run_adds_are_bounded(tmp_path, schema, capsys, extra, message):
    err = _run(capsys, "--sites", str(_sites(tmp_path, GOOD)), "--schema", str(schema), *extra)
    assert message in err


def test_two_sites_holding_the_same_patients_are_refused_naming_both(tmp_path, capsys):
    from tests.fedcare.cli.test_site_prepare import IDS, init_schema, synthetic_site

    schema = init_schema(tmp_path / "federation.json")
    north = synthetic_site(tmp_path / "north.csv")
    shutil.copy(north, tmp_path / "south.csv")  # the same export sent twice
    synthetic_site(tmp_path / "west.csv", offset=2)
    entries = [
        {"data": f"{n}.csv", "objectives": ["readmission"]} for n in ("north", "south", "west")
    ]
    sites = tmp_path / "sites.json"
    sites.write_text(json.dumps(entries))
    out, uri = tmp_path / "results.json", f"sqlite:///{tmp_path / 'mlflow.db'}"
    err = _run(capsys, "--sites", str(sites), "--schema", str(schema), "--out", str(out),
               "--tracking-uri", uri)  # fmt: skip
    assert f"--sites {sites}: sites 'north' ({tmp_path / 'north.csv'}) and 'south'" in err
    assert "120 patient(s) are at more than one site" in err and not IDS.search(err.encode())
    assert not out.exists() and not (tmp_path / "mlflow.db").exists()


def test_a_site_without_its_column_map_is_told_to_add_one_to_its_entry(tmp_path, capsys):
    from tests.fedcare.sites.hospital_sites import write_hospital_sites

    sites, schema = write_hospital_sites(tmp_path, rows=600)
    entries = json.loads(sites.read_text())
    for entry in entries:
        entry.pop("map", None)  # east's export keeps its own names, unmapped
    sites.write_text(json.dumps(entries))
    err = _run(capsys, "--sites", str(sites), "--schema", str(schema))
    assert "missing column(s): 'MRN', 'AGE_YRS'" in err
    assert "map them with site east's \"map\": FILE.yaml holding 'version: 1'" in err
