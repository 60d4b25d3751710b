"""FedCARE's application around the pure core (:mod:`fedcare_core`), organised by role.

- :mod:`fedcare.app`: the services every front end calls (a run, an experiment's grids);
- :mod:`fedcare.cli`: the ``fedcare`` command line, a module per command;
- :mod:`fedcare.flower`: the Flower integration (Stage 1 and the baselines' rounds over
  Flower's simulation and SuperLink/SuperNode processes, SecAgg+, TLS);
- :mod:`fedcare.sites`: the multi-site federation (the coordinator, site folders, a site's
  node, ``fedcare federation run``);
- :mod:`fedcare.tracking`: the MLflow integration (tracking, registry, model packages);
- :mod:`fedcare.grid`: the Dask integration (experiment grids on a cluster);
- :mod:`fedcare.stack`: the local Prefect/MLflow stack;
- :mod:`fedcare.procs`: process operations (ports, marked processes, supervisors, services).

Importing this package imports nothing else (``fedcare --version`` stays instant).
"""
