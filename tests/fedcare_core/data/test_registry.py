"""The dataset registry: each dataset declared once; a new one is a module and an entry point."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from fedcare_core.algorithms import validate_config
from fedcare_core.config import DataConfig, ExperimentConfig
from fedcare_core.data.loading import dataset_definition, load_dataset
from fedcare_core.data.registry import DatasetSpec, dataset_names, get_dataset
from fedcare_core.errors import ConfigError
from tests.fedcare_core.data.toy_dataset import write_toy_file
from tests.installed_plugins import installed


def test_the_registry_holds_both_datasets_and_agrees_with_their_definitions() -> None:
    assert dataset_names() == ("diabetes130", "mimic3")
    for name in dataset_names():
        spec = get_dataset(name)
        for features in spec.feature_sets:
            definition = dataset_definition(name, features)
            assert len(definition.objectives) == spec.objectives
        assert spec.load_source().row_format().dataset == name
    assert get_dataset("diabetes130").fetchable and not get_dataset("mimic3").fetchable
    with pytest.raises(ConfigError, match="unknown dataset 'nope'; expected one of diabetes130"):
        get_dataset("nope")
    with pytest.raises(ConfigError, match=r"unknown dataset 'nope' \(data.dataset\)"):
        validate_config(ExperimentConfig(data=DataConfig(dataset="nope")))


#: A new dataset: ``toy_dataset.py`` and this spec, declared as a ``fedcare.datasets`` entry.
TOY = DatasetSpec("toy", "Toy", "tests.fedcare_core.data.toy_dataset:SOURCE")


@pytest.fixture
def toy_dataset(tmp_path: Path) -> Iterator[DatasetSpec]:
    """The toy dataset, installed by its entry point alone."""
    with installed(
        tmp_path / "site", "toy-dataset", {"fedcare.datasets": {"toy": f"{__name__}:TOY"}}
    ):
        assert dataset_names()[-1] == "toy"
        yield TOY
    assert "toy" not in dataset_names()


def test_a_registered_dataset_loads_and_is_validated_like_the_others(
    toy_dataset: DatasetSpec, tmp_path: Path
) -> None:
    write_toy_file(tmp_path / "data")
    loaded = load_dataset(DataConfig(dataset="toy"), tmp_path / "data")
    assert loaded.cohort.dataset == "toy" and loaded.cohort.n_rows == 600
    assert loaded.partition.private["los"] == ("n_diag", "weight")
    with pytest.raises(ConfigError, match=r"data.features.*not defined for toy"):
        validate_config(ExperimentConfig(data=DataConfig(dataset="toy", features="admission")))


def test_fedcare_run_trains_on_a_new_dataset_with_nothing_else_changed(
    toy_dataset: DatasetSpec, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from fedcare.cli.main import main

    write_toy_file(tmp_path / "data")
    out = tmp_path / "result.json"
    argv = ["run", "--dataset", "toy", "--data-dir", str(tmp_path / "data"), "--quiet"]
    argv += ["--clients", "3", "--rounds", "2", "--stage2-epochs", "1", "--out", str(out)]
    assert main(argv) == 0, capsys.readouterr().err
    document = json.loads(out.read_text())
    assert document["dataset"] == document["config"]["data"]["dataset"] == "toy"
    assert len(document["rounds"]) == 2
    assert set(document["objectives"]) == {"early_discharge", "readmission", "los"}
