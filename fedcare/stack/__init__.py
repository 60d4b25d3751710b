"""The local FedCARE stack: Prefect server, process worker, deployments, MLflow server.

``fedcare stack up`` starts, on loopback ports, a Prefect server (SQLite under
``.stack/prefect``), creates the process work pool, deploys ``prefect.yaml``, starts a process
worker, and starts an MLflow tracking server with the UI (SQLite ``mlflow/mlflow.db``,
artifacts in ``mlflow/artifacts``). ``fedcare stack down`` stops all of them and every process
they started; ``fedcare stack status`` reports them. Each service runs detached in its own
session, with a pid file and a log under ``.stack/``, and carries an environment marker so
teardown leaves no orphans (flow-run processes, task-runner workers included).

Modules: :mod:`~fedcare.stack.settings` (ports, folders, the environment every service gets)
and :mod:`~fedcare.stack.stack` (up, down, status); the detached processes themselves are
:mod:`fedcare.procs.services`.
"""
