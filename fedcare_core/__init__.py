"""FedCARE's pure algorithmic core, one subpackage per concept.

``stage1`` (Algorithm 1), ``stage2`` (Algorithm 2), ``moo`` (the min-norm solver),
``privacy`` (client-level DP), ``algorithms`` (the registry, one folder per method), ``data``
(the dataset registry, one package per dataset, partitions and encoders), ``config`` (every
setting declared once), ``run`` (the pipeline, results, executors, the backend registry),
``resume`` (checkpoints and run folders), ``nn`` (networks and training primitives),
``evaluation``, ``predict`` (what a client deploys), ``sites`` (a multi-site federation's
agreement), ``experiments`` (the paper's grids) and ``files``. Nothing here imports Flower,
Prefect, MLflow, Dask or Great Expectations: those are thin layers (``fedcare``, ``flows``,
``tasks``, ``data_checks``) over this package.

Importing the package pins torch's CPU kernels to one instruction set
(:mod:`fedcare_core.nn.cpu_kernels`), so that a seed gives the same numbers on every x86-64
machine.
"""

from fedcare_core.nn.cpu_kernels import pin_kernel_path

pin_kernel_path()

__version__ = "0.1.0"
