"""FedProx (Li et al., 2020): FedAvg with the proximal term μ/2‖w − w^t‖² in every local step.

μ is ``baselines.prox_mu``; over Flower, ``flwr.serverapp.strategy.FedProx`` sends it to the
clients (``proximal-mu``).
"""

from __future__ import annotations

from fedcare_core.algorithms.base import RunInputs
from fedcare_core.algorithms.fedavg.method import FedAvg
from fedcare_core.algorithms.fedavg.options import FedProxOptions


class FedProx(FedAvg):
    """FedAvg's rounds with a proximal term."""

    name = "fedprox"
    flower_strategy = "FedProx"
    cost_at_ten_clients = 1.5

    def proximal_mu(self, inputs: RunInputs) -> float:
        """``baselines.prox_mu``."""
        return FedProxOptions.of(inputs.config.baselines).prox_mu
