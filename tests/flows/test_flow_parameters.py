"""The flow's parameters mean what the ``fedcare run`` flags of the same names mean."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fedcare.cli.commands import build_parser as _parser
from fedcare.cli.setting_flags import build_config
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
    params = FlowParameters.of(
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
    params = FlowParameters.of(
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
    assert all(c.data.features == "paper" for c in configs)
    (admission,) = FlowParameters.of(features="admission").experiment_configs()
    assert admission.data.features == "admission"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"backend": "ray"}, "unknown backend"),
        ({"algorithms": ("pafnet",), "backend": "flower-sim"}, "runs in process only"),
        ({"seeds": ()}, "at least one seed"),
        ({"algorithms": ("fedcare", "fedcare")}, "repeated algorithms"),
        ({"algorithms": ("fedavg2",)}, "unknown algorithm"),
        ({"clients": 0}, r"clients must lie in \[2, 1000\], got 0"),
        ({"features": "admission", "dataset": "mimic3"}, "'admission' is not defined for mimic3"),
        ({"features": "admission", "rho": 0.3}, "cannot be combined"),
        ({"overrides": {"stage1": {"nope": 1}}}, "invalid configuration override"),
        ({"config_file": "/nonexistent.json"}, "cannot read config"),
    ],
)
def test_bad_parameters_are_config_errors(kwargs: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        FlowParameters.of(**kwargs).validate()


def test_as_tuple() -> None:
    assert as_tuple("fedcare") == ("fedcare",)
    assert as_tuple(3) == (3,)
    assert as_tuple([1, 2]) == (1, 2)


@pytest.fixture
def schema_file(tmp_path: Path) -> str:
    """A federation schema (Diabetes 130, the default configuration) as federation.json."""
    from fedcare_core.config import ExperimentConfig
    from fedcare_core.sites.schema import schema_for

    return str(schema_for(ExperimentConfig()).write(tmp_path / "federation.json"))


def _federation(schema_file: str, **kwargs: object) -> FlowParameters:
    base: dict[str, object] = {
        "backend": "federation",
        "federation_state_dir": "/nonexistent/state",  # only read when the flow runs
        "federation_schema": schema_file,
        "min_sites": 3,  # the default configuration covers diabetes130's 3 objectives
        "rounds": 5,
        "seeds": (0, 1),
    }
    return FlowParameters.of(**{**base, **kwargs})  # type: ignore[arg-type]


def test_backend_federation_needs_no_data_parameter(schema_file: str) -> None:
    params = _federation(schema_file)
    assert params.validate() is params
    assert params.validate_federation().dataset == "diabetes130"
    assert params.to_params()["flow.min_sites"] == "3"


@pytest.mark.parametrize("name", ["federation_state_dir", "federation_schema", "min_sites"])
def test_backend_federation_needs_its_parameters(schema_file: str, name: str) -> None:
    with pytest.raises(ConfigError) as err:
        _federation(schema_file, **{name: None}).validate()
    message = str(err.value)
    assert message.startswith(f"backend 'federation' needs {name} ("), message


@pytest.mark.parametrize(
    ("name", "value"),
    [("federation_state_dir", "/state"), ("federation_schema", "/f.json"), ("min_sites", 2)],
)
@pytest.mark.parametrize("backend", ["local", "flower-sim", "flower-deployment"])
def test_federation_parameters_apply_to_backend_federation_only(
    backend: str, name: str, value: object
) -> None:
    with pytest.raises(ConfigError) as err:
        FlowParameters.of(backend=backend, **{name: value}).validate()  # type: ignore[arg-type]
    assert str(err.value) == (
        f"{name} applies to backend 'federation' only (backend is {backend!r})"
    )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("data_dir", "/data"),
        ("clients", 3),
        ("rho", 0.2),
        ("features", "admission"),
        ("max_patients", 900),
        ("stage2_epochs", 2),
        ("config_file", "/c.json"),
        ("overrides", {"stage1": {"solver": "slsqp"}}),
    ],
)
def test_backend_federation_refuses_what_the_schema_decides(
    schema_file: str, name: str, value: object
) -> None:
    with pytest.raises(ConfigError) as err:
        _federation(schema_file, **{name: value}).validate()
    message = str(err.value)
    assert message.startswith(f"{name}: not with backend 'federation'"), message
    assert "\n" not in message


def test_backend_federation_takes_secure_aggregation_and_nothing_else_as_overrides(
    schema_file: str,
) -> None:
    secure = _federation(schema_file, overrides={"stage1": {"secagg": True}})
    assert secure.validate().secagg and not _federation(schema_file).secagg
    for overrides in (
        {"stage1": {"secagg": True, "rounds": 3}},
        {"stage1": {"secagg": True}, "seed": 1},
    ):
        with pytest.raises(ConfigError, match=r"^overrides: not with backend 'federation'"):
            _federation(schema_file, overrides=overrides).validate()


@pytest.mark.parametrize("algorithms", [("fedavg",), ("fedcare", "fedcare-b"), ("fedcare-b",)])
def test_backend_federation_runs_fedcare_only(schema_file: str, algorithms: tuple) -> None:
    with pytest.raises(ConfigError, match=r"^algorithm \[.*\]: backend 'federation' runs fedcare"):
        _federation(schema_file, algorithms=algorithms).validate()


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"min_sites": 0}, ("min_sites", "0")),
        ({"min_sites": 1}, ("min_sites", "1")),
        ({"min_sites": 1.5}, ("min_sites", "1.5")),
        ({"federation_state_dir": 3}, ("federation_state_dir",)),
        ({"seeds": (0, 0)}, ("seeds", "[0, 0]")),
        ({"seeds": ()}, ("seeds",)),
        ({"rounds": 0}, ("rounds", "0")),
        ({"dataset": "mimic3"}, ("dataset 'mimic3'", "schema's dataset 'diabetes130'")),
        ({"federation_schema": "/nonexistent/f.json"}, ("federation_schema", "/nonexistent")),
    ],
)
def test_bad_federation_parameters_name_the_parameter(
    schema_file: str, kwargs: dict, words: tuple[str, ...]
) -> None:
    with pytest.raises(ConfigError) as err:
        _federation(schema_file, **kwargs).validate()
    message = str(err.value)
    assert "\n" not in message and all(w in message for w in words), message


def test_a_malformed_schema_is_named_by_the_parameter(tmp_path: Path, schema_file: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "fedcare-federation/9"}))
    with pytest.raises(ConfigError) as err:
        _federation(schema_file, federation_schema=str(bad)).validate()
    assert str(err.value).startswith(f"federation_schema {bad}: field 'format' must be"), str(
        err.value
    )
