"""FMGDA: federated multi-gradient descent with full local gradients, on the union view.

Algorithm 1's per-objective aggregation and min-norm λ* over one global FullMLP, each client's
local step a full pass (:func:`fedcare_core.baselines.fmgda.run_mgda` with ``full=True``).
"""

from __future__ import annotations

from fedcare_core.algorithms.base import BaselineBackend, Rounds, RunInputs, Stage1Runner
from fedcare_core.algorithms.union_view import GlobalUnionBaseline, union_layout
from fedcare_core.baselines.fmgda import run_mgda
from fedcare_core.training import ProgressFn


class Fmgda(GlobalUnionBaseline):
    """FMGDA; :class:`~fedcare_core.algorithms.fsmgda.Fsmgda` uses mini-batch gradients."""

    name = "fmgda"
    #: Full local gradients (FMGDA) or mini-batch ones (FSMGDA).
    full_gradients = True

    def rounds(
        self, inputs: RunInputs, backend: Stage1Runner | None, progress: ProgressFn | None
    ) -> Rounds:
        """The rounds, in process or on a backend that runs this baseline."""
        config = inputs.config
        if isinstance(backend, BaselineBackend):
            return Rounds(
                backend.run_federated_baseline(
                    self.name, inputs.federation, union_layout(inputs), config, progress
                )
            )
        stage1 = run_mgda(
            inputs.view,
            config.model,
            config.stage1,
            config.seed,
            full=self.full_gradients,
            progress=progress,
        )
        return Rounds(stage1)
