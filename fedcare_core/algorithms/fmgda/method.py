"""FMGDA: federated multi-gradient descent with full local gradients, on the union view.

Algorithm 1's per-objective aggregation and min-norm λ* over one global FullMLP, each client's
local step a full pass (:func:`fedcare_core.algorithms.fmgda.rounds.run_mgda` with ``full=True``).
"""

from __future__ import annotations

from fedcare_core.algorithms.base import RunInputs
from fedcare_core.algorithms.fmgda.rounds import run_mgda
from fedcare_core.algorithms.union.view import GlobalUnionBaseline
from fedcare_core.config import Stage1Config
from fedcare_core.data.clients import Federation
from fedcare_core.nn.training import ProgressFn
from fedcare_core.stage1.loop import Stage1Result


class Fmgda(GlobalUnionBaseline):
    """FMGDA; :class:`~fedcare_core.algorithms.fmgda.fsmgda.Fsmgda` uses mini-batch gradients."""

    name = "fmgda"
    private_rounds = True
    #: Full local gradients (FMGDA) or mini-batch ones (FSMGDA).
    full_gradients = True
    # Full passes over every client's rows: the same rows whatever K.
    cost_at_ten_clients = 12.0
    cost_scales_with_clients = False

    def flower_stage1(self, stage1: Stage1Config, federation: Federation) -> Stage1Config:
        """Algorithm 1 as FMGDA runs it (:func:`.rounds.mgda_config`)."""
        from fedcare_core.algorithms.fmgda.rounds import mgda_config

        return mgda_config(stage1, federation, full=self.full_gradients)

    def in_process_rounds(self, inputs: RunInputs, progress: ProgressFn | None) -> Stage1Result:
        """Algorithm 1 over the union view with this method's local gradients."""
        config = inputs.config
        return run_mgda(
            inputs.view,
            config.model,
            config.stage1,
            config.seed,
            full=self.full_gradients,
            progress=progress,
        )
