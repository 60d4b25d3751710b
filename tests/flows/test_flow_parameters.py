"""The flow's parameters mean what the ``fedcare run`` flags of the same names mean."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fedcare_cli.main import _parser, build_config
from fedcare_core.errors import ConfigError
from flows.flow_parameters import FlowParameters, as_tuple


def test_same_configuration_as_the_cli(tmp_path: Path) -> None:
    config_file = tmp_path / "c.json"
    config_file.write_text(json.dumps({"stage1": {"local_steps": 3}}))
    args = _parser().parse_args(
        [
            "run", "--config", str(config_file), "--dataset", "diabetes130", "--clients", "4",
            "--rounds", "7", "--seed", "5", "--rho", "0.2", "--max-patients", "900",
            "--stage2-epochs", "3", "--algorithm", "fedcare-b",
        ]
    )  # fmt: skip
    params = FlowParameters(
        algorithms=("fedcare-b",),
        seeds=(5,),
        clients=4,
        rounds=7,
        rho=0.2,
        max_patients=900,
        stage2_epochs=3,
        config_file=str(config_file),
    ).validate()
    assert params.experiment_configs() == [build_config(args)]


def test_algorithm_times_seed_and_overrides() -> None:
    params = FlowParameters(
        algorithms=("fedcare", "fedcare-b"),
        seeds=(0, 1),
        overrides={"stage1": {"solver": "slsqp"}, "threads": 1},
    )
    configs = params.experiment_configs()
    assert [(c.algorithm, c.seed) for c in configs] == [
        ("fedcare", 0), ("fedcare", 1), ("fedcare-b", 0), ("fedcare-b", 1),
    ]  # fmt: skip
    assert all(c.stage1.solver == "slsqp" for c in configs)
    assert params.to_params()["flow.seeds"] == "[0, 1]"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"backend": "ray"}, "unknown backend"),
        ({"algorithms": ("pafnet",), "backend": "flower-sim"}, "runs in process only"),
        ({"seeds": ()}, "at least one seed"),
        ({"algorithms": ("fedcare", "fedcare")}, "repeated algorithms"),
        ({"algorithms": ("fedavg2",)}, "unknown algorithm"),
        ({"clients": 0}, "clients must be"),
        ({"overrides": {"stage1": {"nope": 1}}}, "invalid configuration override"),
        ({"config_file": "/nonexistent.json"}, "cannot read config"),
    ],
)
def test_bad_parameters_are_config_errors(kwargs: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        FlowParameters(**kwargs).validate()


def test_as_tuple() -> None:
    assert as_tuple("fedcare") == ("fedcare",)
    assert as_tuple(3) == (3,)
    assert as_tuple([1, 2]) == (1, 2)
