"""Every valid definition goes through ``federation init`` and ``site prepare``.

A definition the coordinator accepts must give a schema every site can prepare against: the
definitions here omit each optional key of the published JSON Schema in turn (read off the
schema by :mod:`tests.fedcare.cli.definition_variants`, so a key added to it is covered), and
each goes ``federation init --dataset FILE.yaml`` → ``site prepare`` on a small synthetic
export written as it declares; so do the worked example and the built-in datasets.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from fedcare.cli.main import main
from fedcare_core.data.declared import read_definition
from fedcare_core.errors import ConfigError, DefinitionError
from tests.fedcare.cli.definition_variants import (
    MAXIMAL,
    KeyPath,
    general,
    optional_paths,
    uncovered_keys,
    without,
    write_definition,
    write_export,
)
from tests.fedcare.cli.test_site_prepare import synthetic_site
from tests.fedcare_core.data.declared.helpers import EXAMPLE_DEFINITION

#: Each optional key of the schema the maximal definition writes, in general form.
OPTIONAL_KEYS = sorted({general(p) for p in optional_paths(MAXIMAL)})
#: Optional in the schema, but never left out of a valid definition (the checks say why).
NEVER_LEFT_OUT = {
    "columns.*.known_at": "every feature is in the partition, so it must have a time",
    "columns.*.parse": "a float column with a vocabulary is parsed from intervals",
    "columns.*.range": "a number needs its plausible range",
    "columns.*.groups": "the grouped column is common, so it needs its groups' vocabulary",
    "partition.ignores_prediction_times": "the maximal partition shows a feature late",
}
OBJECTIVES = "mortality,readmission,los"


def round_trip(document: Mapping[str, Any], folder: Path, objectives: str = OBJECTIVES) -> None:
    """``federation init`` on ``document``, then ``site prepare`` on an export it declares."""
    folder.mkdir(parents=True, exist_ok=True)
    definition = write_definition(document, folder / "definition.yaml")
    export = write_export(document, folder / "export.csv")
    schema = folder / "federation.json"
    init = ["federation", "init", "--dataset", str(definition), "--out", str(schema)]
    assert main([*init, "--rounds", "2"]) == 0
    prepare(schema, export, folder / "site", objectives)


def prepare(schema: Path, data: Path, out: Path, objectives: str) -> None:
    argv = ["site", "prepare", "--schema", str(schema), "--data", str(data)]
    assert main([*argv, "--objectives", objectives, "--out", str(out), "--name", "site-a"]) == 0
    assert (out / "site.json").is_file()


@pytest.fixture(scope="module")
def valid_omissions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, KeyPath]:
    """Each general key → the first place it can be left out of a valid definition."""
    folder = tmp_path_factory.mktemp("omissions")
    chosen: dict[str, KeyPath] = {}
    for i, path in enumerate(optional_paths(MAXIMAL)):
        key = general(path)
        if key in chosen:
            continue
        try:
            read_definition(write_definition(without(MAXIMAL, path), folder / f"{i}.yaml"))
        except DefinitionError:
            continue
        chosen[key] = path
    return chosen


def test_the_maximal_definition_writes_every_optional_key_of_the_schema() -> None:
    assert uncovered_keys(MAXIMAL) == []
    objectives = [{k: v for k, v in o.items() if k != "metric"} for o in MAXIMAL["objectives"]]
    assert uncovered_keys(MAXIMAL | {"objectives": objectives}) == ["objectives.*.metric"]
    assert len(OPTIONAL_KEYS) >= 35


def test_the_maximal_definition_round_trips(tmp_path: Path) -> None:
    round_trip(MAXIMAL | {"name": "riverside-max"}, tmp_path)


@pytest.mark.parametrize("key", OPTIONAL_KEYS)
def test_a_definition_without_an_optional_key_round_trips(
    key: str, valid_omissions: dict[str, KeyPath], tmp_path: Path
) -> None:
    if key in NEVER_LEFT_OUT:
        assert key not in valid_omissions, f"{key} can be left out now: test it"
        return
    path = valid_omissions[key]
    name = f"riverside-{OPTIONAL_KEYS.index(key)}"
    round_trip(without(MAXIMAL, path) | {"name": name}, tmp_path)


def test_the_worked_example_round_trips(tmp_path: Path) -> None:
    import yaml

    document = yaml.safe_load(EXAMPLE_DEFINITION.read_text(encoding="utf-8"))
    # Its own name: the example's is registered by other tests of this process at its path.
    round_trip({**document, "name": "riverside-copy"}, tmp_path, "mortality,los")


def test_the_built_in_diabetes130_round_trips(tmp_path: Path) -> None:
    schema = tmp_path / "federation.json"
    argv = ["federation", "init", "--dataset", "diabetes130", "--out", str(schema)]
    assert main([*argv, "--rounds", "2"]) == 0
    site = synthetic_site(tmp_path / "site.csv")
    prepare(schema, site, tmp_path / "site", "early_discharge,readmission,los")


@pytest.mark.slow
@pytest.mark.realdata
def test_the_built_in_mimic3_round_trips(data_dir: Path, tmp_path: Path) -> None:
    schema = tmp_path / "federation.json"
    argv = ["federation", "init", "--dataset", "mimic3", "--out", str(schema)]
    assert main([*argv, "--rounds", "2"]) == 0
    prepare(schema, data_dir / "mimic3-demo", tmp_path / "site", "mortality,los")


def test_init_refuses_a_schema_the_sites_would_refuse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Unit test: a schema that would not read back is refused before it is written."""
    from fedcare_core.sites import schema as schema_module

    def refuse(doc: Any) -> None:
        raise ConfigError(f"{doc.where}: field 'objectives[0].label' must not be empty")

    monkeypatch.setattr(schema_module, "_check_schema_shape", refuse)
    out = tmp_path / "federation.json"
    assert main(["federation", "init", "--dataset", "diabetes130", "--out", str(out)]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("fedcare: error: federation schema of diabetes130 (not written): ")
    assert "\n" not in error and not out.exists()
