"""The MLflow model of a client's deployed model, as MLflow's *models from code*.

MLflow copies this file into every logged client model (``python_model`` is this file's path),
so the model's code travels with it and loading it needs only FedCARE installed — no pickled
object. The model's one artifact is the client's package (:mod:`fedcare_core.model_package`):
its encoders, predictor recipe and weights. ``predict`` takes raw rows as a pandas DataFrame
(labels absent or ignored) and returns one named column per objective; a row that cannot be
scored raises an :class:`~mlflow.exceptions.MlflowException` (HTTP 400 under
``mlflow models serve``) whose message names the column and rows, never a value.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from mlflow.exceptions import MlflowException
from mlflow.models import set_model
from mlflow.protos.databricks_pb2 import INVALID_PARAMETER_VALUE
from mlflow.pyfunc import PythonModel
from mlflow.pyfunc.model import PythonModelContext

#: The model's artifact holding the package folder.
PACKAGE_ARTIFACT = "package"
#: The predict parameter that overrides the run's unseen-category policy.
UNSEEN_PARAM = "unseen_categories"


class FedcareClientModel(PythonModel):
    """A client's deployed model: its preprocessing and predictor, raw rows in."""

    def load_context(self, context: PythonModelContext) -> None:
        """Read the package from the model's artifacts."""
        from fedcare_core.model_package import load_package

        self.package = load_package(context.artifacts[PACKAGE_ARTIFACT])

    def predict(
        self, context: PythonModelContext, model_input: Any, params: dict[str, Any] | None = None
    ) -> pd.DataFrame:
        """One named column per objective for each row of ``model_input``."""
        from fedcare_core.errors import FedcareError

        try:
            return self.package.score(
                model_input, unseen_categories=(params or {}).get(UNSEEN_PARAM)
            )
        except FedcareError as exc:
            raise MlflowException(str(exc), error_code=INVALID_PARAMETER_VALUE) from None


set_model(FedcareClientModel())
