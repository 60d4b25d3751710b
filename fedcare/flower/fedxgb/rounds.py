"""fedxgb's rounds over Flower, the ``fedcare.federated_rounds`` entry ``trees``."""

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
from fedcare.flower.run_plan import RunPlan


class TreeRounds:
    """Flower's FedXgbBagging: each site boosts trees, the server bags them."""

    broadcasts = True  # the bagged trees to each site of a federation

    def strategy(self, plan: RunPlan, on_round: RoundHook | None) -> Any:
        """:class:`~fedcare.flower.fedxgb.strategy.TreeBagging`."""
        from fedcare.flower.fedxgb.strategy import TreeBagging

        return TreeBagging(plan, on_round=on_round)

    def train_config(self, strategy: Any, plan: RunPlan) -> ConfigRecord | None:
        """The strategy's boosting plan for the round."""
        config: ConfigRecord = strategy.train_config()
        return config

    def train(self, locate: DataLocator, msg: Message, context: Context) -> Message:
        """The trees the client boosts this round."""
        from fedcare.flower.client_app import assigned, cached_client, data_key
        from fedcare.flower.fedxgb.trees import trees_train

        client = assigned(cached_client(locate, context), msg.content)
        return Message(trees_train(client, data_key(locate(context)), msg.content), reply_to=msg)

    def evaluate(self, locate: DataLocator, msg: Message, context: Context) -> Message:
        """The ensembles' losses on the client's validation rows."""
        from fedcare.flower.client_app import assigned, cached_client, data_key
        from fedcare.flower.fedxgb.trees import trees_evaluate

        client = assigned(cached_client(locate, context), msg.content)
        return Message(trees_evaluate(client, data_key(locate(context)), msg.content), reply_to=msg)

    def read_final_model(self, path: Path, received: ReceivedShape) -> ReceivedModel:
        """The bagged trees' bytes, unpacked and read by XGBoost once; no network layout."""
        from fedcare.flower.fedxgb.received import read_stage1_trees
        from fedcare_core.nn.param_vectors import ParamLayout

        arrays = read_stage1_trees(path, received.objectives, received.kinds)
        return arrays, ParamLayout(total=0, backbone=slice(0, 0), heads={})


#: The entry (``pyproject.toml``).
TREES = TreeRounds()
