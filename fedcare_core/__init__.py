"""FedCARE's pure algorithmic core.

Data loading, feature partitioning, models, the min-norm solver, Stage 1 and Stage 2 and an
in-process runner. Nothing here imports Flower, Prefect, MLflow or Great Expectations: those are
thin layers (``fedcare_cli``, ``flows``, ``tasks``, ``data_checks``) over this package.
"""

__version__ = "0.1.0"
