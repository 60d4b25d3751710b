"""Centralised (a bound, SPEC §4): one FullMLP on every client's training rows pooled.

The ceiling for federated learning over these clients' data; every client deploys it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fedcare_core.algorithms.base import Rounds, RunInputs, Stage1Runner, with_validation_outputs
from fedcare_core.algorithms.bounds.rounds import client_slices, no_rounds, run_centralised
from fedcare_core.algorithms.union.view import UnionBound, union_predictors
from fedcare_core.nn.training import ProgressFn
from fedcare_core.predict.predictors import ClientPredictor


class Centralised(UnionBound):
    """Centralised: the pooled model at every client."""

    name = "centralised"
    cost_at_ten_clients = 2.5
    cost_scales_with_clients = False  # one model on the pooled rows, whatever K
    in_process_reason = (
        "Centralised pools every client's rows in one place: there is no federated round to run"
    )

    def rounds(
        self, inputs: RunInputs, backend: Stage1Runner | None, progress: ProgressFn | None
    ) -> Rounds:
        """The pooled fit (reported as one unit of ``"centralised"`` progress)."""
        config = inputs.config
        fitted = run_centralised(inputs.view, config.model, config.baselines, config.seed)
        if progress is not None:
            progress("centralised", 1, 1)
        stage1 = no_rounds(
            inputs.federation.objective_names,
            [f"centralised: best epoch {fitted.best_epoch} ({fitted.stopped})"],
            fitted.model,
        )
        outputs = client_slices(fitted.validation_outputs, inputs.view.clients)
        return Rounds(stage1, (fitted.model,), outputs)

    def predictors(
        self, inputs: RunInputs, rounds: Rounds, personal: Sequence[Any]
    ) -> list[ClientPredictor]:
        """The pooled model at every client, over its union vectors."""
        model = rounds.models[0]
        shared = union_predictors(inputs, [model] * len(inputs.federation.clients))  # type: ignore[list-item]
        return with_validation_outputs(shared, rounds.validation_outputs)
