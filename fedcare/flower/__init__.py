"""FedCARE Stage 1 over Flower (flwr 1.42 Message API): a thin layer over ``fedcare_core``.

``messages`` encodes the core's dataclasses as Flower records (the wire layout is documented
there), ``client_app`` and ``strategy`` call :func:`fedcare_core.stage1.loop.client_update` and
:func:`fedcare_core.stage1.loop.server_step`, ``server_app`` wires the strategy into a ServerApp,
and ``simulation`` / ``deployment`` are :data:`fedcare_core.run.pipeline.Stage1Runner`
implementations for Flower's Simulation Engine and for SuperLink/SuperNode processes.
``baselines`` runs FedAvg/FedProx on Flower's own strategies (the runners also run FMGDA/FSMGDA on
``FedCareStrategy``: :class:`fedcare_core.algorithms.base.BaselineBackend`). Nothing in
``fedcare_core`` imports this package. Everything here uses Flower's public API except
``flwr_internals``, the one module that touches its internals (the deployment speed-ups),
behind a check of the flwr version. The backends themselves are registered in
:mod:`fedcare_core.config.backends`, by import path.
"""
