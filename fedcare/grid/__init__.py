"""The experiment engine's grids on Dask (``dask.distributed``): the Dask integration.

:func:`grid_client` opens a cluster (a local one on loopback by default, or an existing
scheduler's address) and :func:`run_grid` runs a grid's jobs on it with the core's pure pieces
(the run service's :func:`~fedcare.app.grid_jobs.run_job`,
:class:`~fedcare.experiments.engine.GridRun`).
The experiment flows run the same jobs as Prefect tasks on ``prefect-dask``'s
``DaskTaskRunner``, configured by :func:`local_cluster_kwargs`. The core imports nothing of
this package.
"""

from fedcare.grid.cluster import LOOPBACK, cluster_workers, grid_client, local_cluster_kwargs
from fedcare.grid.grid import run_grid

__all__ = ["LOOPBACK", "cluster_workers", "grid_client", "local_cluster_kwargs", "run_grid"]
