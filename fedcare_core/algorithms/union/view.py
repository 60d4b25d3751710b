"""The union view shared by the baselines that train one FullMLP over every feature.

FedAvg, FedProx, FMGDA, FSMGDA, Local and Centralised see each client's rows as union vectors
(:func:`fedcare_core.algorithms.union.features.union_federation`: every feature any client holds,
zero where the client lacks it); those that deploy one global model score it over the same view.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

from fedcare_core.algorithms.base import (
    Algorithm,
    BaselineBackend,
    FederatedBaseline,
    Rounds,
    RunInputs,
    Stage1Runner,
)
from fedcare_core.algorithms.union.features import UnionLayout, union_federation
from fedcare_core.config import ExperimentConfig
from fedcare_core.data.clients import Federation
from fedcare_core.nn.models import MultiObjectiveModel
from fedcare_core.nn.training import ProgressFn, objective_kinds
from fedcare_core.predict.predictors import ClientPredictor, UnionInput
from fedcare_core.stage1.loop import Stage1Result, load_global_model


def union_view(federation: Federation) -> tuple[Federation, UnionLayout | None]:
    """The union view of the clients and its layout."""
    return union_federation(federation)


def union_predictors(
    inputs: RunInputs, models: Sequence[MultiObjectiveModel]
) -> list[ClientPredictor]:
    """Each client's FullMLP over its union vectors.

    Parameters
    ----------
    inputs
        The run's inputs (the prepared clients and the union layout).
    models
        One model per client of ``inputs.federation`` (the same object where they share one).

    Returns
    -------
    list of ClientPredictor
        One :class:`~fedcare_core.predict.predictors.UnionInput` per client, in client order.
    """
    layout = union_layout(inputs)
    config: ExperimentConfig = inputs.config
    kinds = objective_kinds(inputs.federation)
    return [
        UnionInput(
            model,
            c.objectives,
            kinds,
            config.model,
            common_width=layout.common_width,
            private_index=layout.private_index(c.private_encoder).tolist(),
        )
        for c, model in zip(inputs.federation.clients, models, strict=True)
    ]


def union_layout(inputs: RunInputs) -> UnionLayout:
    """The run's union layout (present for every union-view algorithm)."""
    if inputs.layout is None:
        raise ValueError("this algorithm needs the union view")
    return inputs.layout


class UnionBound(Algorithm):
    """A bound without federated rounds, trained on the union view."""

    def view(self, federation: Federation) -> tuple[Federation, UnionLayout | None]:
        """The union view."""
        return union_view(federation)


class GlobalUnionBaseline(FederatedBaseline):
    """A federated baseline whose global FullMLP over the union view every client deploys."""

    def view(self, federation: Federation) -> tuple[Federation, UnionLayout | None]:
        """The union view."""
        return union_view(federation)

    def rounds(
        self, inputs: RunInputs, backend: Stage1Runner | None, progress: ProgressFn | None
    ) -> Rounds:
        """The rounds, in process or on a backend that runs this baseline."""
        if isinstance(backend, BaselineBackend):
            layout = union_layout(inputs)
            return Rounds(
                backend.run_federated_baseline(
                    self.name, inputs.federation, layout, inputs.config, progress
                )
            )
        return Rounds(self.in_process_rounds(inputs, progress))

    @abstractmethod
    def in_process_rounds(self, inputs: RunInputs, progress: ProgressFn | None) -> Stage1Result:
        """The rounds over the union view, in this process."""

    def predictors(
        self, inputs: RunInputs, rounds: Rounds, personal: Sequence[Any]
    ) -> list[ClientPredictor]:
        """The global FullMLP at every client, over its union vectors."""
        model = load_global_model(rounds.stage1, union_layout(inputs).width, inputs.config.model)
        return union_predictors(inputs, [model] * len(inputs.federation.clients))
