"""fedxgb's rounds over Flower, the ``fedcare.federated_rounds`` entry ``trees``."""

from __future__ import annotations

from typing import Any

from flwr.app import ConfigRecord, Context, Message

from fedcare.flower.federated_rounds import DataLocator, RoundHook
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


#: The entry (``pyproject.toml``).
TREES = TreeRounds()
