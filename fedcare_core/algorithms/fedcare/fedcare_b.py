"""FedCARE-B: FedCARE's Stage 1 alone; every client deploys the global model w*."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fedcare_core.algorithms.base import Algorithm, Rounds, RunInputs, Stage1Runner
from fedcare_core.algorithms.fedcare.method import (
    global_predictors,
    stage1_grid_cost,
    stage1_rounds,
)
from fedcare_core.nn.training import ProgressFn
from fedcare_core.predict.predictors import ClientPredictor


class FedCareB(Algorithm):
    """FedCARE without Stage 2 (the ablation of personalisation)."""

    name = "fedcare-b"
    flower = True
    private_rounds = True
    runs_stage1 = True

    def grid_cost(self, clients: int) -> float:
        """FedCARE's (a grid runs both from one Stage 1)."""
        return stage1_grid_cost(clients)

    def rounds(
        self, inputs: RunInputs, backend: Stage1Runner | None, progress: ProgressFn | None
    ) -> Rounds:
        """Stage 1 (Algorithm 1), exactly as FedCARE's."""
        return stage1_rounds(inputs, backend, progress)

    def predictors(
        self, inputs: RunInputs, rounds: Rounds, personal: Sequence[Any]
    ) -> list[ClientPredictor]:
        """The global model w* at every client."""
        return global_predictors(inputs, rounds.stage1)
