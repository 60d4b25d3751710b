"""A run's deployed models as packages: one per client, scoring raw rows on their own."""

from __future__ import annotations

from fedcare_core.data.registry import get_dataset
from fedcare_core.predict.package import ModelPackage
from fedcare_core.run.results import ExperimentResult


def client_package(result: ExperimentResult, index: int) -> ModelPackage:
    """The package of the ``index``-th client of a run.

    Parameters
    ----------
    result
        A run's result (with the predictors each client deploys).
    index
        Position of the client in ``result.federation.clients``.

    Returns
    -------
    ModelPackage
        Its encoders and predictor.
    """
    client = result.federation.clients[index]
    return ModelPackage(
        dataset=result.federation.dataset,
        algorithm=result.config.algorithm,
        client_id=client.client_id,
        common_encoder=client.common_encoder,
        private_encoder=client.private_encoder,
        predictor=result.predictors[index],
        unseen_categories=result.config.data.unseen_categories,
        definition=client.definition or get_dataset(result.config.data.dataset).definition_text,
    )
