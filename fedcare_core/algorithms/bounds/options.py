"""The bounds' own settings, Local's and Centralised's training (the ``fedcare.options`` entry)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fedcare_core.config.limits import STEPS
from fedcare_core.config.method_options import MethodOptions
from fedcare_core.config.quick import QUICK_EPOCHS
from fedcare_core.config.sections import BASELINES_GROUP
from fedcare_core.config.settings import setting


@dataclass(frozen=True)
class BoundOptions(MethodOptions):
    """How long Local and Centralised train."""

    bound_epochs: int = setting(
        40, help="Local and Centralised: training epochs", range=STEPS, group=BASELINES_GROUP
    )
    bound_patience: int = setting(
        6, help="Local and Centralised: epochs without validation improvement that end training",
        range=STEPS, group=BASELINES_GROUP,
    )  # fmt: skip

    def quick(self) -> dict[str, Any]:
        """Their epochs capped at the quick limit."""
        return {"bound_epochs": min(self.bound_epochs, QUICK_EPOCHS)}
