"""Log each client's deployed model as an MLflow pyfunc that scores raw rows.

One logged model per client (name ``client<k>``) in the run of its algorithm × seed: MLflow's
*models from code* (:mod:`fedcare.tracking.pyfunc_model`) over the client's package
(:mod:`fedcare_core.predict.package`). Its signature is column-based — the dataset's row columns
in, one ``double`` column per objective out (``<objective>_probability``, ``<objective>_days``)
followed by each length-of-stay objective's prediction interval (``<objective>_days_low``,
``<objective>_days_high``; :attr:`~fedcare_core.predict.package.ModelPackage.output_columns`),
and a ``unseen_categories`` parameter — and its input example is synthetic rows
(:func:`fedcare_core.data.rows.row_format`), never a patient's. Each model carries its model
card (:mod:`fedcare.tracking.model_card`).
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path

import mlflow.pyfunc
import numpy as np
import pandas as pd
import torch
from mlflow.models import Model, ModelSignature
from mlflow.types.schema import AnyType, ColSpec, ParamSchema, ParamSpec, Schema

from fedcare.tracking import pyfunc_model, store
from fedcare.tracking.model_card import RUN_CARDS_DIR, model_card_html
from fedcare_core import __version__
from fedcare_core.predict.package import ModelPackage, save_package
from fedcare_core.run.packaging import client_package
from fedcare_core.run.results import ExperimentResult

#: The model card's key among a logged model's artifacts (``artifacts/client<k>.html``).
CARD_ARTIFACT = "model_card"
#: Logged-model name of client ``k``'s deployed model.
CLIENT_MODEL_TEMPLATE = "client{client}"


def client_model_name(client: int) -> str:
    """Logged-model name of a client's deployed model."""
    return CLIENT_MODEL_TEMPLATE.format(client=client)


def _row_signature(package: ModelPackage) -> ModelSignature:
    """The column-based signature of a package's model.

    Every input column is typed ``any`` and marked optional for MLflow, though the model needs
    each: MLflow's own schema errors quote the input data (patient rows) in their message, and
    refuse what pandas legitimately reads (an integer column for a ``double``, an empty text
    column as float). The package checks presence and every value itself, naming the column
    and rows, never a value (:meth:`~fedcare_core.predict.package.ModelPackage.score`).
    """
    inputs = Schema([ColSpec(AnyType(), c, required=False) for c in package.input_columns])
    outputs = Schema([ColSpec("double", c) for c in package.output_columns])
    params = ParamSchema(
        [ParamSpec(pyfunc_model.UNSEEN_PARAM, "string", package.unseen_categories)]
    )
    return ModelSignature(inputs=inputs, outputs=outputs, params=params)


def _example(package: ModelPackage) -> pd.DataFrame:
    """Synthetic rows of the package's input columns (never a patient's).

    The dataset's made-up rows (:func:`~fedcare_core.data.rows.row_format`); for another
    cohort, one row of zeros and first categories.
    """
    example = package.row_format().example
    if example is not None:
        return example().loc[:, package.input_columns]
    vocab = dict(package.common_encoder.categorical) | dict(package.private_encoder.categorical)
    row = {
        c: 0.0 if c in package.numeric_columns else (vocab[c][0] if vocab.get(c) else None)
        for c in package.input_columns
    }
    return pd.DataFrame([row], columns=package.input_columns)


def _requirements() -> list[str]:
    # Explicit requirements skip MLflow's inference (which would load the model in a
    # subprocess); local version labels (+cpu) are dropped. FedCARE itself must be installed
    # (``--env-manager local``): it is not on PyPI.
    return [
        f"torch=={torch.__version__.split('+')[0]}",
        f"pandas=={pd.__version__}",
        f"numpy=={np.__version__}",
        f"mlflow=={mlflow.__version__}",
    ]


def _log_client_model(
    package: ModelPackage,
    *,
    run_id: str,
    experiment_id: str,
    params: Mapping[str, str] | None = None,
    card: str | None = None,
) -> str:
    """Log one client's package as a pyfunc; return its logged-model id.

    Parameters
    ----------
    package
        The client's deployed model with its preprocessing.
    run_id, experiment_id
        The run that produced it and its experiment.
    params
        Params recorded on the logged model (the run's configuration).
    card
        Its model card (HTML, :mod:`fedcare.tracking.model_card`), logged among the model's
        artifacts and the run's (``model_cards/client<k>.html``).

    Returns
    -------
    str
        The logged-model id (``models:/<id>``).
    """
    name = client_model_name(package.client_id)
    logged = store.client().create_logged_model(
        experiment_id=experiment_id,
        name=name,
        source_run_id=run_id,
        params=dict(params or {}),
        tags={"fedcare.client": str(package.client_id), "fedcare.algorithm": package.algorithm},
    )
    with tempfile.TemporaryDirectory(prefix="fedcare-package-") as tmp:
        folder = save_package(package, Path(tmp) / "package")
        artifacts = {pyfunc_model.PACKAGE_ARTIFACT: str(folder)}
        if card is not None:
            cards = Path(tmp) / RUN_CARDS_DIR
            cards.mkdir()
            page = cards / f"{name}.html"
            page.write_text(card, encoding="utf-8")
            store.client().log_artifact(run_id, str(page), RUN_CARDS_DIR)
            artifacts[CARD_ARTIFACT] = str(page)
        Model.log(
            artifact_path=None,
            name=name,
            flavor=mlflow.pyfunc,
            run_id=run_id,
            model_id=logged.model_id,
            python_model=pyfunc_model.__file__,
            artifacts=artifacts,
            signature=_row_signature(package),
            input_example=_example(package),
            pip_requirements=_requirements(),
            metadata={
                "fedcare_version": __version__,
                "dataset": package.dataset,
                "algorithm": package.algorithm,
                "client": package.client_id,
                "objectives": list(package.objectives),
                "outputs": package.output_columns,
                "output": "one column per objective: probability (binary) or days (length of "
                "stay); then per length-of-stay objective its prediction interval's ends, in "
                "days (NaN without an interval)",
                "intervals": package.interval_summary(),
            },
        )
    return str(logged.model_id)


def log_client_models(
    result: ExperimentResult, *, run_id: str, experiment_id: str, params: Mapping[str, str]
) -> dict[int, str]:
    """Log every client's deployed model of a run; client id → logged-model id."""
    return {
        client.client_id: _log_client_model(
            client_package(result, i),
            run_id=run_id,
            experiment_id=experiment_id,
            params=params,
            card=model_card_html(result, i),
        )
        for i, client in enumerate(result.federation.clients)
    }
