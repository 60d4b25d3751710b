"""Thin Prefect tasks over ``fedcare_core``, ``data_checks`` and ``fedcare.tracking``.

* :mod:`tasks.data` — read and validate the raw tables, load the cohort, build and validate the
  federation.
* :mod:`tasks.training` — Stage 1 (backend a parameter), Stage 2 of one client, evaluation.
* :mod:`tasks.tracking` — the flow run's MLflow parent run, logging one algorithm × seed run,
  the model registry.
* :mod:`tasks.artifacts` — Prefect artifacts (the validation report, run links).

Each task calls one or two public functions of those packages and nothing more. Retries are set
only on I/O (reading files, talking to the tracking server), never on the maths. Caching is off:
inputs are large in-memory objects (cohorts, federations) that are not worth hashing.
"""
