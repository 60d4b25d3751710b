"""FedAvg (McMahan et al., 2017) on the union view: one global FullMLP, size-weighted averages.

The client step is :func:`fedcare_core.baselines.fedavg.local_train`; a Flower backend runs the
same rounds with Flower's own FedAvg strategy (``fedcare_flower.baselines``).
"""

from __future__ import annotations

from fedcare_core.algorithms.base import BaselineBackend, Rounds, RunInputs, Stage1Runner
from fedcare_core.algorithms.union_view import GlobalUnionBaseline, union_layout
from fedcare_core.baselines.fedavg import run_fedavg
from fedcare_core.training import ProgressFn


class FedAvg(GlobalUnionBaseline):
    """FedAvg; :class:`~fedcare_core.algorithms.fedprox.FedProx` adds the proximal term."""

    name = "fedavg"

    def proximal_mu(self, inputs: RunInputs) -> float:
        """μ of the proximal term (0: plain FedAvg)."""
        return 0.0

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
        stage1 = run_fedavg(
            inputs.view,
            config.model,
            config.baselines,
            config.stage1.rounds,
            config.seed,
            prox_mu=self.proximal_mu(inputs),
            progress=progress,
        )
        return Rounds(stage1)
