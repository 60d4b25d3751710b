"""Local (a bound, SPEC §4): each client trains alone on its own rows; no communication.

The per-client fits are the run's per-client phase
(:func:`fedcare_core.algorithms.bounds.rounds.fit`,
each client's random streams keyed by its id), so an executor may run them in parallel.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fedcare_core.algorithms.base import (
    Personalisation,
    Rounds,
    RunInputs,
    Stage1Runner,
    with_validation_outputs,
)
from fedcare_core.algorithms.bounds.rounds import FitResult, fit_local_client, no_rounds
from fedcare_core.algorithms.union.view import UnionBound, union_predictors
from fedcare_core.config import ExperimentConfig
from fedcare_core.data.clients import ClientData
from fedcare_core.nn.training import ProgressFn, objective_kinds
from fedcare_core.predict.predictors import ClientPredictor
from fedcare_core.stage1.loop import Stage1Result


class Local(UnionBound):
    """Local: each client deploys the model it trained alone."""

    name = "local"
    cost_scales_with_clients = False  # every client fits its own rows: the same rows whatever K
    in_process_reason = "Local is a bound without communication: there is no federated round to run"
    personal_phase = "local"
    deploys = "personal"

    def rounds(
        self, inputs: RunInputs, backend: Stage1Runner | None, progress: ProgressFn | None
    ) -> Rounds:
        """No rounds."""
        return Rounds(no_rounds(inputs.federation.objective_names, []))

    def personalisation(self, inputs: RunInputs, rounds: Rounds) -> Personalisation:
        """Every client's union view, with the objective kinds."""
        return Personalisation(
            inputs.view.clients, (objective_kinds(inputs.view), inputs.view.common_width)
        )

    def personalise_client(
        self, shared: Any, client: ClientData, config: ExperimentConfig
    ) -> FitResult:
        """One client's fit (early stopping on its validation rows)."""
        kinds, width = shared
        return fit_local_client(client, kinds, width, config.model, config.baselines, config.seed)

    def predictors(
        self, inputs: RunInputs, rounds: Rounds, personal: Sequence[Any]
    ) -> list[ClientPredictor]:
        """Each client's own model, over its union vectors."""
        own = union_predictors(inputs, [f.model for f in personal])
        return with_validation_outputs(own, [f.validation_outputs for f in personal])

    def stage1_record(
        self, inputs: RunInputs, rounds: Rounds, personal: Sequence[Any]
    ) -> Stage1Result:
        """No rounds; the notes give each client's kept epoch."""
        return no_rounds(
            inputs.federation.objective_names,
            [f"local: best epoch per client {[f.best_epoch for f in personal]}"],
        )
