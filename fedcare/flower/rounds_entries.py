"""FedCARE's own federated rounds over Flower, as entries of ``fedcare.federated_rounds``.

Each is a :class:`~fedcare.flower.federated_rounds.FederatedRounds`: Algorithm 1 (FedCARE and
FedCARE-B; FMGDA and FSMGDA on the union view) and Flower's FedAvg and FedProx on the union
view (fedxgb's trees are in its own folder, :mod:`fedcare.flower.fedxgb.rounds`). Their code is
imported when a run uses them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flwr.app import ConfigRecord, Context, Message

from fedcare.flower.federated_rounds import (
    DataLocator,
    ReceivedModel,
    ReceivedShape,
    RoundHook,
)
from fedcare.flower.messages import ProtocolError
from fedcare.flower.run_plan import RunPlan


class Stage1Rounds:
    """Algorithm 1: τ local steps per objective, the server's min-norm step (SPEC §2)."""

    broadcasts = True  # w* to each site of a federation

    def strategy(self, plan: RunPlan, on_round: RoundHook | None) -> Any:
        """:class:`~fedcare.flower.strategy.FedCareStrategy` (its SecAgg+ one is the app's)."""
        from fedcare.flower.strategy import FedCareStrategy

        return FedCareStrategy(plan, on_round=on_round)

    def train_config(self, strategy: Any, plan: RunPlan) -> ConfigRecord | None:
        """None: each instruction carries its own configuration."""
        return None

    def train(self, locate: DataLocator, msg: Message, context: Context) -> Message:
        """Every Δ_{k,s} of the client's τ local steps from ``w^t``."""
        from fedcare.flower.client_app import stage1_train

        return stage1_train(locate, msg, context)

    def evaluate(self, locate: DataLocator, msg: Message, context: Context) -> Message:
        """None: Algorithm 1 sends no ``evaluate`` message."""
        raise ProtocolError("an evaluate message in Algorithm 1's rounds, which send none")

    def read_final_model(self, path: Path, received: ReceivedShape) -> ReceivedModel:
        """``w*``'s two vectors, of the lengths the schema's network has."""
        from fedcare.flower.received_model import read_stage1_arrays
        from fedcare_core.nn.param_vectors import get_buffers, param_layout
        from fedcare_core.stage1.loop import build_model

        built = build_model(received.common_width, received.objectives, received.model, 0)
        layout = param_layout(built)
        sizes = {"params": layout.total, "buffers": int(get_buffers(built).size)}
        return read_stage1_arrays(path, sizes), layout


#: The entry (``pyproject.toml``).
STAGE1 = Stage1Rounds()
