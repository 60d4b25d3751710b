"""Resuming interrupted work: one format and one fingerprint for everything that continues.

:mod:`.checkpoint` holds Stage 1's snapshot and result format (``.npz``, no pickle) and the
fingerprint of what Stage 1 depends on; :mod:`.run_folder` is ``fedcare run --run-dir``'s
folder. Flower's servers, the Prefect flow's Stage 1 cache and the grids' cell documents use
these.
"""
