"""The MLflow model of a client's deployed model, as MLflow's *models from code*.

MLflow copies this file into every logged client model (``python_model`` is this file's path),
so the model's code travels with it and loading it needs only FedCARE installed — no pickled
object. The model's one artifact is the client's package (:mod:`fedcare_core.predict.package`):
its encoders, predictor recipe and weights. ``predict`` takes raw rows as a pandas DataFrame
(labels absent or ignored) and returns one named column per objective; a row that cannot be
scored raises :class:`~fedcare_core.errors.DataError` naming the column and rows, never a value;
under ``mlflow models serve`` it is answered 400 with that line as the reply's ``message``
(:class:`ScoringRefused`).
"""

from __future__ import annotations

import os
from typing import Any

import pandas as pd
from mlflow.exceptions import MlflowException
from mlflow.models import set_model
from mlflow.pyfunc import PythonModel
from mlflow.pyfunc.model import PythonModelContext

from fedcare.tracking.model_folder import PACKAGE_ARTIFACT  # the package folder's artifact name

#: The predict parameter that overrides the run's unseen-category policy.
UNSEEN_PARAM = "unseen_categories"


class FedcareClientModel(PythonModel):
    """A client's deployed model: its preprocessing and predictor, raw rows in."""

    def load_context(self, context: PythonModelContext) -> None:
        """Read the package from the model's artifacts."""
        from fedcare_core.predict.package import load_package

        self.package = load_package(context.artifacts[PACKAGE_ARTIFACT])

    def predict(
        self,
        context: PythonModelContext,
        model_input: pd.DataFrame,
        params: dict[str, Any] | None = None,
    ) -> pd.DataFrame:
        """One named column per objective for each row of ``model_input``."""
        from fedcare_core.errors import FedcareError

        try:
            return self.package.score(
                model_input, unseen_categories=(params or {}).get(UNSEEN_PARAM)
            )
        except FedcareError as exc:
            if os.environ.get(_SERVING_ENV, "").lower() == "true":
                raise ScoringRefused(str(exc)) from None
            raise  # in process: the DataError itself (fedcare predict adds the file)


#: Set by MLflow's scoring server (``mlflow models serve``) in its process.
_SERVING_ENV = "_MLFLOW_IS_IN_SERVING_ENVIRONMENT"


class ScoringRefused(MlflowException):
    """Rows the model cannot score, as MLflow's scoring server should answer them.

    The server answers any other exception with a generic message and the whole traceback
    (FedCARE's line at its end), and rewrites the message of an MlflowException to quote the
    input, i.e. patient rows, before answering. This one answers 400 (``BAD_REQUEST``) with
    FedCARE's line (column and rows, never a value) as the reply's ``message``, and keeps it:
    a later assignment to ``message`` is ignored.
    """

    def __init__(self, line: str) -> None:
        from mlflow.protos.databricks_pb2 import BAD_REQUEST

        super().__init__(line, error_code=BAD_REQUEST)

    @property
    def message(self) -> str:
        """FedCARE's line, as first given."""
        return self._line

    @message.setter
    def message(self, value: str) -> None:
        if not hasattr(self, "_line"):
            self._line = value


set_model(FedcareClientModel())
