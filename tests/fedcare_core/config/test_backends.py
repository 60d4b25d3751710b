"""Backends: each declared once, by its entry point, loaded lazily, refused by name."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from fedcare_core.algorithms import backend_refusal, secagg_backend_refusal
from fedcare_core.config import DataConfig, ExperimentConfig, Stage1Config, Stage2Config, backends
from fedcare_core.config.backends import BackendSpec, backend_names, get_backend
from fedcare_core.errors import ConfigError
from fedcare_core.run.pipeline import run_experiment
from tests.fedcare_core.synthetic import PARTITION, make_cohort
from tests.installed_plugins import installed


def test_fedcare_declares_three_backends_and_the_core_imports_none() -> None:
    assert backend_names() == ("flower-deployment", "flower-sim", "local")
    assert backends.secagg_backends() == ("flower-deployment", "flower-sim")
    assert get_backend("local").build() is None
    assert get_backend("local").packages() == ()
    assert get_backend("flower-deployment").packages() == ("fedcare.flower",)
    source = open(backends.__file__, encoding="utf-8").read()
    assert "import flwr" not in source and "fedcare.flower" not in source


@pytest.mark.parametrize("name", ["flower-sim", "flower-deployment"])
def test_every_import_path_resolves(name: str) -> None:
    spec = get_backend(name)
    options = spec.options_from({"round_timeout_s": 30.0})
    runner = spec.build(options)
    assert runner is not None and runner.flower.round_timeout_s == 30.0


def test_unknown_backends_and_options_are_refused_by_name() -> None:
    with pytest.raises(
        ConfigError, match="unknown backend 'ray'; expected one of flower-deployment, "
    ):
        get_backend("ray")
    with pytest.raises(ConfigError, match="takes no options"):
        get_backend("local").options_from({"round_timeout_s": 1})
    with pytest.raises(ConfigError, match="--round-timeout"):
        get_backend("flower-sim").options_from(
            {"round_timeout_s": -1.0}, {"round_timeout_s": "--round-timeout"}
        )


@dataclass(frozen=True)
class ToyOptions:
    """A toy backend's options (the shape the registry expects)."""

    label: str = "toy"

    @classmethod
    def from_options(cls, values: dict[str, Any], names: Any = None) -> ToyOptions:
        return cls(**values)


def toy_runner(options: ToyOptions) -> Any:
    """The toy backend's Stage 1 runner: the core's loop, tagged."""
    from fedcare_core.stage1.loop import run_stage1

    def run(federation: Any, model: Any, stage1: Any, seed: int, progress: Any) -> Any:
        return run_stage1(federation, model, stage1, seed, progress=progress)

    run.label = options.label  # type: ignore[attr-defined]
    return run


#: A new backend: its spec, declared by an outside distribution's entry point.
TOY = BackendSpec(
    "toy", "a toy", factory=f"{__name__}:toy_runner", options=f"{__name__}:ToyOptions"
)


@pytest.fixture
def toy_backend(tmp_path: Any) -> Iterator[BackendSpec]:
    """The toy backend installed by its entry point alone."""
    with installed(tmp_path, "toy-backend", {"fedcare.backends": {"toy": f"{__name__}:TOY"}}):
        yield get_backend("toy")


def test_a_new_backend_is_one_module_and_one_entry_point(toy_backend: BackendSpec) -> None:
    runner = get_backend("toy").build(get_backend("toy").options_from({"label": "x"}))
    assert runner.label == "x"
    config = ExperimentConfig(
        data=DataConfig(clients=3),
        stage1=Stage1Config(rounds=2),
        stage2=Stage2Config(epochs=1),
    )
    toy = run_experiment(make_cohort(300), PARTITION, config, stage1_runner=runner)
    local = run_experiment(make_cohort(300), PARTITION, config)
    assert toy.to_dict()["rounds"] == local.to_dict()["rounds"]
    # Every entry then offers it and applies its capabilities: federated rounds only,
    # no secure aggregation.
    assert backend_refusal("fedcare", "toy") is None
    assert "runs in process only" in str(backend_refusal("pafnet", "toy"))
    assert "backend 'toy' cannot" in str(secagg_backend_refusal("toy"))
