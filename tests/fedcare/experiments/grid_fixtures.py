"""A tiny grid both the engine's and the Dask layer's tests run: its base and its cells."""

from __future__ import annotations

from fedcare.experiments.cells import Cell
from fedcare_core.config import (
    DataConfig,
    ExperimentConfig,
    Stage1Config,
    Stage2Config,
)
from fedcare_core.config.method_options import baselines

BASE = ExperimentConfig(
    data=DataConfig(clients=3, max_patients=900),
    stage1=Stage1Config(rounds=3),
    stage2=Stage2Config(epochs=2),
    baselines=baselines(bound_epochs=2),
)
#: Two FedCARE / FedCARE-B pairs (one at ρ = 0.3) and a FedAvg run.
CELLS = [
    Cell("fedcare", 0, 3),
    Cell("fedcare-b", 0, 3),
    Cell("fedavg", 0, 3),
    Cell("fedcare", 1, 3, 0.3),
    Cell("fedcare-b", 1, 3, 0.3),
]
