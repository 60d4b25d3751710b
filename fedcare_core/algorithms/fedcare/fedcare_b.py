"""FedCARE-B: FedCARE's Stage 1 alone; every client deploys the global model w*."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fedcare_core.algorithms.base import Rounds, RunInputs
from fedcare_core.algorithms.fedcare.method import Stage1Algorithm, global_predictors
from fedcare_core.predict.predictors import ClientPredictor


class FedCareB(Stage1Algorithm):
    """FedCARE without Stage 2 (the ablation of personalisation)."""

    name = "fedcare-b"

    def predictors(
        self, inputs: RunInputs, rounds: Rounds, personal: Sequence[Any]
    ) -> list[ClientPredictor]:
        """The global model w* at every client."""
        return global_predictors(inputs, rounds.stage1)
