"""The MLflow model of a client's deployed model, as MLflow's *models from code*.

MLflow copies this file into every logged client model (``python_model`` is this file's path),
so the model's code travels with it and loading it needs only FedCARE installed — no pickled
object. The model's one artifact is the client's package (:mod:`fedcare_core.model_package`):
its encoders, predictor recipe and weights. ``predict`` takes raw rows as a pandas DataFrame
(labels absent or ignored) and returns one named column per objective; a row that cannot be
scored raises :class:`~fedcare_core.errors.DataError` (HTTP 400 under ``mlflow models serve``,
the message in the returned traceback), naming the column and rows, never a value.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from mlflow.models import set_model
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
        self,
        context: PythonModelContext,
        model_input: pd.DataFrame,
        params: dict[str, Any] | None = None,
    ) -> pd.DataFrame:
        """One named column per objective for each row of ``model_input``."""
        # A row that cannot be scored raises FedcareError (DataError, ConfigError), not an
        # MlflowException: MLflow's scoring server quotes the whole input (patient rows) in
        # the message of an MlflowException, while for any other error it answers 400 with
        # the traceback, whose last line is the FedCARE message (column and rows, no value).
        return self.package.score(model_input, unseen_categories=(params or {}).get(UNSEEN_PARAM))


set_model(FedcareClientModel())
