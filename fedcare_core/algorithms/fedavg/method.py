"""FedAvg (McMahan et al., 2017) on the union view: one global FullMLP, size-weighted averages.

The client step is :func:`fedcare_core.algorithms.fedavg.rounds.local_train`; a Flower backend runs
the same rounds with Flower's own FedAvg strategy (``fedcare.flower.fedavg``). ``stage1.dp_*``
make the rounds client-level differentially private (the mechanism of FedCARE's Stage 1).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fedcare_core.algorithms.base import RunInputs
from fedcare_core.algorithms.fedavg.rounds import LocalUpdate, aggregate_models, run_fedavg
from fedcare_core.algorithms.union.view import GlobalUnionBaseline
from fedcare_core.nn.param_vectors import ParamLayout
from fedcare_core.nn.training import ProgressFn
from fedcare_core.stage1.loop import Stage1Result


class FedAvg(GlobalUnionBaseline):
    """FedAvg; :class:`~fedcare_core.algorithms.fedavg.fedprox.FedProx` adds the proximal term."""

    name = "fedavg"
    flower_strategy = "FedAvg"
    federated_rounds = "union-fedavg"
    cost_at_ten_clients = 1.4
    private_rounds = True

    def proximal_mu(self, inputs: RunInputs) -> float:
        """μ of the proximal term (0: plain FedAvg)."""
        return 0.0

    def aggregate(
        self,
        params: np.ndarray,
        buffers: np.ndarray,
        updates: Sequence[LocalUpdate],
        layout: ParamLayout,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The server step of a round without DP: the size-weighted average.

        A method that aggregates otherwise (a median, a trimmed mean) overrides this alone: the
        in-process rounds and the Flower strategy both call it. Under DP the round is the
        clipped, noisy average whatever the method (:attr:`private_rounds`).

        Parameters
        ----------
        params, buffers
            ``w^t`` and its BatchNorm statistics.
        updates
            The replying clients' updates, in client-id order.
        layout
            Backbone and head slices of the flat parameter vector.

        Returns
        -------
        tuple[numpy.ndarray, numpy.ndarray]
            ``w^{t+1}`` and its statistics (float32).
        """
        return aggregate_models(params, buffers, updates, layout)

    def in_process_rounds(self, inputs: RunInputs, progress: ProgressFn | None) -> Stage1Result:
        """FedAvg's rounds over the union view."""
        config = inputs.config
        return run_fedavg(
            inputs.view,
            config.model,
            config.baselines,
            config.stage1.rounds,
            config.seed,
            prox_mu=self.proximal_mu(inputs),
            progress=progress,
            privacy=config.stage1.privacy(),
            aggregate=self.aggregate,
        )
