"""The paper's experiments as grids of runs, a parallel engine for them, and their summaries.

Pure core: no orchestration or tracking imports. :mod:`.cells` defines the grids,
:mod:`.engine` runs them across processes, :mod:`.summary` turns result documents into
mean ± std tables.
"""
