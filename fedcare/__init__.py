"""FedCARE's application around the pure core (:mod:`fedcare_core`), organised by role.

- :mod:`fedcare.cli`: the ``fedcare`` command line, a module per command;
- :mod:`fedcare.flower`: Stage 1 over Flower (simulation, SuperLink/SuperNode, the sites'
  federation);
- :mod:`fedcare.tracking`: MLflow tracking, registry and model packages;
- :mod:`fedcare.grid`: experiment grids on Dask;
- :mod:`fedcare.stack` and :mod:`fedcare.procs`: the local Prefect/MLflow stack and the
  processes the project starts.

Importing this package imports nothing else (``fedcare --version`` stays instant).
"""
