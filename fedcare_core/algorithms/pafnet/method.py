"""PAFNet (Molaei et al.): client-specific projections, trainable masks, peer-attentive rounds.

Each client trains on its own features (no union view) and deploys its own model, which the
rounds produce (:func:`fedcare_core.algorithms.pafnet.rounds.run_pafnet`). In process only: the
clients are stateful across rounds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fedcare_core.algorithms.base import (
    Algorithm,
    Rounds,
    RunInputs,
    Stage1Runner,
    with_validation_outputs,
)
from fedcare_core.algorithms.pafnet.options import PafnetOptions
from fedcare_core.algorithms.pafnet.predictor import OwnInput
from fedcare_core.algorithms.pafnet.rounds import run_pafnet
from fedcare_core.nn.training import ProgressFn, objective_kinds
from fedcare_core.predict.predictors import ClientPredictor


class Pafnet(Algorithm):
    """PAFNet; each client deploys the model its rounds left it."""

    name = "pafnet"
    cost_at_ten_clients = 1.8
    in_process_reason = (
        "PAFNet's clients are stateful (their projection layers and masks persist across "
        "rounds and never leave the client), the server keeps one peer-attentive aggregate "
        "per client, and each client deploys its own best-validation model, which the "
        "in-process evaluation needs; none of that fits a stateless ClientApp yet"
    )
    deploys = "personal"

    def rounds(
        self, inputs: RunInputs, backend: Stage1Runner | None, progress: ProgressFn | None
    ) -> Rounds:
        """PAFNet's rounds; each client's deployed model comes with them."""
        config = inputs.config
        stage1, models, outputs = run_pafnet(
            inputs.federation,
            config.model,
            config.baselines,
            config.stage1.rounds,
            config.seed,
            progress=progress,
        )
        return Rounds(stage1, models, outputs)

    def predictors(
        self, inputs: RunInputs, rounds: Rounds, personal: Sequence[Any]
    ) -> list[ClientPredictor]:
        """Each client's own PAFNet model, over its own features."""
        config = inputs.config
        kinds = objective_kinds(inputs.federation)
        latent = PafnetOptions.of(config.baselines).pafnet_latent
        own = [
            OwnInput(m, kinds, config.model, latent=latent)  # type: ignore[arg-type]
            for m in rounds.models
        ]
        return with_validation_outputs(own, rounds.validation_outputs)
