"""Process operations: every process the project starts, and how it ends.

:mod:`.ports` (loopback ports), :mod:`.marked` (processes found by an environment marker and
ended together), :mod:`.children` (a run's child processes: sessions, the run token, the
supervisor), :mod:`.services` (the stack's detached services: pid files, logs, process groups)
and :mod:`.watchdog` (ends a run's processes when the process that started it dies). The
Flower layer, the multi-site federation, the grids and the local stack all use these.
"""
