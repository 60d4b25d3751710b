"""Choose a Stage 1 runner by backend name (``fedcare run --backend``)."""

from __future__ import annotations

from fedcare_core.algorithms.base import Stage1Runner
from fedcare_core.errors import ConfigError
from fedcare_flower import BACKENDS
from fedcare_flower.flower_options import FlowerConfig


def make_stage1_runner(backend: str, flower: FlowerConfig | None = None) -> Stage1Runner | None:
    """The Stage 1 runner of ``backend`` (None: the core's in-process runner).

    Raises
    ------
    ConfigError
        For an unknown backend name.
    """
    if backend not in BACKENDS:
        raise ConfigError(f"unknown backend {backend!r}; expected one of {', '.join(BACKENDS)}")
    if backend == "flower-sim":
        from fedcare_flower.simulation import SimulationStage1Runner

        return SimulationStage1Runner(flower)
    if backend == "flower-deployment":
        from fedcare_flower.deployment import DeploymentStage1Runner

        return DeploymentStage1Runner(flower)
    return None
