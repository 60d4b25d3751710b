"""MLflow tracking of FedCARE runs: a thin layer that logs a finished run's results."""
