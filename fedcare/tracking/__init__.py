"""MLflow tracking of FedCARE runs: a thin layer that logs a finished run's results.

Modules: :mod:`~fedcare.tracking.store` (tracking URI, experiments, parent runs),
:mod:`~fedcare.tracking.mlflow_params` (configuration → params), :mod:`~fedcare.tracking.plots`,
:mod:`~fedcare.tracking.serving` (the backbone's exported wrapper),
:mod:`~fedcare.tracking.client_models` and :mod:`~fedcare.tracking.pyfunc_model` (each client's
deployed model as a pyfunc over raw rows), :mod:`~fedcare.tracking.client_registry` (one
registered model per client and objectives), :mod:`~fedcare.tracking.model_names` (registered
names, tags and descriptions: what a model predicts, for whom, from what),
:mod:`~fedcare.tracking.track` (log and register a run: the
entry of the flow and of ``fedcare run --tracking-uri``),
:mod:`~fedcare.tracking.log_run` (:func:`~fedcare.tracking.log_run.log_experiment`),
:mod:`~fedcare.tracking.naming` (run names, metric keys with their unit),
:mod:`~fedcare.tracking.summary` (a parent run's mean and std over seeds),
:mod:`~fedcare.tracking.views` (the experiment's saved runs-table views and description) and
:mod:`~fedcare.tracking.registry` (backbone registration and the ``champion`` alias).

Importing this package sets three environment defaults *before* MLflow is imported by any of its
modules: MLflow 3 starts a usage-telemetry client at import time unless
``MLFLOW_DISABLE_TELEMETRY`` is true (``DO_NOT_TRACK`` works too, but only with the value
``"true"``, not ``"1"``), and artifact uploads draw a progress bar on stderr unless
``MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR`` is false, and with a tracking server every ended run
prints a "View run … at" line to stdout unless ``MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT`` is
true. A value the user already set is kept.
"""

import os

#: Environment defaults applied on import (an explicit user setting wins).
_ENV_DEFAULTS = {
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false",
    "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",
}

for _key, _value in _ENV_DEFAULTS.items():
    os.environ.setdefault(_key, _value)
