"""FedCARE's pure algorithmic core.

Data loading, feature partitioning, models, the min-norm solver, Stage 1 and Stage 2 and an
in-process runner. Nothing here imports Flower, Prefect, MLflow or Great Expectations: those are
thin layers (``fedcare.cli``, ``flows``, ``tasks``, ``data_checks``) over this package.

Importing the package pins torch's CPU kernels to one instruction set (:mod:`.cpu_kernels`), so
that a seed gives the same numbers on every x86-64 machine.
"""

from fedcare_core.cpu_kernels import pin_kernel_path

pin_kernel_path()

__version__ = "0.1.0"
