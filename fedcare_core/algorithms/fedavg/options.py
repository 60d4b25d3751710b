"""FedProx's own setting: μ, the proximal term's weight (the ``fedcare.options`` entry)."""

from __future__ import annotations

from dataclasses import dataclass

from fedcare_core.config.fields import NON_NEGATIVE
from fedcare_core.config.method_options import MethodOptions
from fedcare_core.config.sections import BASELINES_GROUP
from fedcare_core.config.settings import setting


@dataclass(frozen=True)
class FedProxOptions(MethodOptions):
    """FedProx's μ (FedAvg's local training otherwise)."""

    prox_mu: float = setting(
        0.01, help="FedProx's μ: the local objective adds μ/2 ‖w − w^t‖² (0 is FedAvg)",
        range=NON_NEGATIVE, group=BASELINES_GROUP,
    )  # fmt: skip
