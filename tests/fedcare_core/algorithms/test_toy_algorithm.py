"""A new algorithm is one class and one entry point; its capabilities are on its class.

The toy algorithm below is FedCARE-B's Stage 1 under another name, installed as an outside
distribution declaring it in the ``fedcare.algorithms`` group; every entry runs it and reads its
capabilities (checkpointed rounds, a backbone to register, secure aggregation) from the class.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from fedcare_core import algorithms
from fedcare_core.algorithms import algorithm_names, get_algorithm
from fedcare_core.algorithms.base import Algorithm, Rounds, RunInputs, Stage1Runner
from fedcare_core.algorithms.fedcare.method import global_predictors, stage1_rounds
from fedcare_core.config import DataConfig, ExperimentConfig, Stage1Config, Stage2Config
from fedcare_core.errors import ConfigError
from fedcare_core.nn.training import ProgressFn
from fedcare_core.predict.predictors import ClientPredictor
from fedcare_core.resume.run_folder import RunFolder
from fedcare_core.run.pipeline import run_experiment
from tests.fedcare_core.synthetic import PARTITION, make_cohort
from tests.installed_plugins import installed


class Toy(Algorithm):
    """Stage 1 alone, every client deploying w* (FedCARE-B under another name)."""

    name = "toy"
    flower = True
    private_rounds = True
    runs_stage1 = True

    def rounds(
        self, inputs: RunInputs, backend: Stage1Runner | None, progress: ProgressFn | None
    ) -> Rounds:
        """Stage 1."""
        return stage1_rounds(inputs, backend, progress)

    def predictors(
        self, inputs: RunInputs, rounds: Rounds, personal: Sequence[Any]
    ) -> list[ClientPredictor]:
        """w* at every client."""
        return global_predictors(inputs, rounds.stage1)


@pytest.fixture
def toy(tmp_path: Path) -> Iterator[str]:
    """The toy installed by its entry point."""
    entries = {"fedcare.algorithms": {"toy": f"{__name__}:Toy"}}
    with installed(tmp_path / "site", "toy-method", entries):
        assert algorithm_names()[-1] == "toy"  # after FedCARE's own
        yield "toy"
    assert "toy" not in algorithm_names()


def _config(algorithm: str) -> ExperimentConfig:
    return ExperimentConfig(
        algorithm=algorithm,
        data=DataConfig(clients=3),
        stage1=Stage1Config(rounds=2, batch_size=32),
        stage2=Stage2Config(epochs=1, batch_size=32),
    )


def test_a_new_algorithm_runs_and_its_capabilities_are_read_from_its_class(
    toy: str, tmp_path: Path
) -> None:
    toy_doc = run_experiment(make_cohort(300), PARTITION, _config(toy)).to_dict()
    b_doc = run_experiment(make_cohort(300), PARTITION, _config("fedcare-b")).to_dict()
    assert toy_doc["rounds"] == b_doc["rounds"]
    assert toy_doc["objectives"] == b_doc["objectives"]
    # Its rounds are checkpointed in a run folder, as the class says (a baseline's are not).
    folder = RunFolder.create(tmp_path / "run")
    assert folder.stage1_runner(toy, print) is not None
    assert folder.stage1_runner("fedavg", print) is None
    # Secure aggregation is allowed for it as for FedCARE's own methods.
    algorithms.validate_config(_config(toy).with_overrides(stage1={"secagg": True}))


def test_the_capabilities_of_the_registered_algorithms() -> None:
    stage1 = [n for n in algorithm_names() if get_algorithm(n).runs_stage1]
    assert stage1 == ["fedcare", "fedcare-b"]
    with pytest.raises(ConfigError, match=r"stage1\.secagg applies to fedcare, fedcare-b"):
        algorithms.validate_config(_config("fedavg").with_overrides(stage1={"secagg": True}))
