"""FedAvg's family's rounds over Flower, the ``fedcare.federated_rounds`` entry ``union-fedavg``."""

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


class UnionFedAvgRounds:
    """FedAvg and FedProx (Flower's strategies) over the clients' union vectors."""

    broadcasts = False  # not a site federation's method

    def strategy(self, plan: RunPlan, on_round: RoundHook | None) -> Any:
        """Flower's FedProx (μ from the plan) or FedAvg, aggregating by the core's step."""
        from fedcare.flower.fedavg.strategy import make_strategy

        return make_strategy(plan, on_round)

    def train_config(self, strategy: Any, plan: RunPlan) -> ConfigRecord | None:
        """The algorithm, the model, the union layout and the DP clip."""
        from fedcare.flower.fedavg.wire import baseline_train_config

        return baseline_train_config(plan)

    def train(self, locate: DataLocator, msg: Message, context: Context) -> Message:
        """The client's local epochs from the global model."""
        from fedcare.flower.client_app import cached_client, data_key
        from fedcare.flower.fedavg.wire import baseline_train

        key = data_key(locate(context))
        reply = baseline_train(cached_client(locate, context), key, msg.content)
        return Message(reply, reply_to=msg)

    def evaluate(self, locate: DataLocator, msg: Message, context: Context) -> Message:
        """None: FedAvg's rounds send no ``evaluate`` message here."""
        raise ProtocolError("an evaluate message in FedAvg's rounds, which send none")

    def read_final_model(self, path: Path, received: ReceivedShape) -> ReceivedModel:
        """None: these rounds send a site no final model."""
        raise ProtocolError("FedAvg's rounds over the union view send a site no final model")


#: The entry (``pyproject.toml``).
UNION_FEDAVG = UnionFedAvgRounds()
