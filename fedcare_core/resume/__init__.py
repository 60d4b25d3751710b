"""Resuming and reusing work: one package, one format per kind of state, one family of keys.

- :mod:`.keys`: what a piece of work depends on (``stage1_fingerprint``, the grid's
  ``base_fingerprint``, the Stage 1 cache's ``stage1_cache_key``);
- :mod:`.checkpoint`: Stage 1's state after a round and its finished result, as ``.npz``
  archives (no pickle), written atomically; a runner that resumes from the last one;
- :mod:`.run_folder`: a run kept for ``--resume`` (configuration, checkpoint, results);
- :mod:`.documents`: finished results kept as JSON documents by key (a grid's cells).

Its users are adapters: ``fedcare run --run-dir/--resume`` (the run service), Flower's Stage 1
servers (``fedcare.flower.plan_checkpoint``: the same checkpoint in the plan's file), the
Prefect flow's Stage 1 cache (``tasks.stage1_cache``: the same result archive under the same
key family) and the grids, on Dask or Prefect (the cell documents).
"""
