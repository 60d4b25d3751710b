"""Where a run's phases execute: the executor a run is given decides, not the algorithm.

:func:`fedcare_core.run.pipeline.run_algorithm` hands every phase to an :class:`Executor`:
``run(phase, fn, *args)`` for a phase that runs once (the rounds, the evaluation) and
``map(phase, fn, items, *shared)`` for a per-client phase (Stage 2, Local's fits), whose tasks
are independent (each client's random streams are keyed by the seed and its id), so any
executor gives the same results.

- :class:`InProcess` (the default): everything in this process, clients in order.
- :class:`ProcessPool`: per-client tasks over ``concurrent.futures`` worker processes.
- The Prefect flow's executor (``tasks.executor.PrefectExecutor``) runs each phase as a Prefect
  task and maps the per-client tasks over the flow's task runner.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import Executor as FuturesExecutor
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Protocol, TypeVar

from fedcare_core.nn.training import ProgressFn
from fedcare_core.run.interrupts import child_ignores_interrupts

T = TypeVar("T")


class Executor(Protocol):
    """Runs a run's phases (see the module docstring)."""

    def run(self, phase: str, fn: Callable[..., T], /, *args: Any) -> T:
        """Run a once-per-run phase and return its result."""
        ...

    def map(
        self,
        phase: str,
        fn: Callable[..., T],
        items: Sequence[Any],
        /,
        *shared: Any,
        progress: ProgressFn | None = None,
    ) -> list[T]:
        """``[fn(item, *shared) for item in items]``, in the order of ``items``."""
        ...


class InProcess:
    """Every phase in this process; a per-client phase's clients one after another."""

    def run(self, phase: str, fn: Callable[..., T], /, *args: Any) -> T:
        """Call ``fn(*args)``."""
        return fn(*args)

    def map(
        self,
        phase: str,
        fn: Callable[..., T],
        items: Sequence[Any],
        /,
        *shared: Any,
        progress: ProgressFn | None = None,
    ) -> list[T]:
        """Call ``fn(item, *shared)`` for each item in order, reporting progress after each."""
        out: list[T] = []
        for i, item in enumerate(items):
            out.append(fn(item, *shared))
            if progress is not None:
                progress(phase, i + 1, len(items))
        return out


class ProcessPool(InProcess):
    """Per-client tasks over worker processes (``spawn``); once-per-run phases in process.

    Each task's arguments are pickled to its worker: a client's task carries only that
    client's data. ``fn`` must be a module-level function.

    Parameters
    ----------
    workers
        Worker processes.
    pool
        An existing ``concurrent.futures`` executor to submit to instead (kept open).
    """

    def __init__(self, workers: int, pool: FuturesExecutor | None = None) -> None:
        self.workers = workers
        self.pool = pool

    def map(
        self,
        phase: str,
        fn: Callable[..., T],
        items: Sequence[Any],
        /,
        *shared: Any,
        progress: ProgressFn | None = None,
    ) -> list[T]:
        """Submit every ``fn(item, *shared)``; return the results in the order of ``items``."""
        if self.pool is not None:
            return _collect(self.pool, phase, fn, items, shared, progress)
        others = set(multiprocessing.active_children())
        pool = worker_pool(min(self.workers, len(items)) or 1)
        try:
            out = _collect(pool, phase, fn, items, shared, progress)
        except KeyboardInterrupt:
            # Ctrl-C or SIGTERM: the workers' tasks would run to their end; stop them now.
            pool.shutdown(wait=False, cancel_futures=True)
            for proc in set(multiprocessing.active_children()) - others:
                proc.kill()
            raise
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
        return out


def worker_pool(workers: int) -> ProcessPoolExecutor:
    """A pool of ``workers`` ``spawn`` processes that ignore the terminal's Ctrl-C.

    Ctrl-C reaches every process of the terminal's group: the parent decides how the run ends
    (:func:`fedcare_core.run.interrupts.child_ignores_interrupts`), and no worker prints its own
    KeyboardInterrupt traceback.
    """
    return ProcessPoolExecutor(
        workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=child_ignores_interrupts,
    )


def _collect(
    pool: FuturesExecutor,
    phase: str,
    fn: Callable[..., T],
    items: Sequence[Any],
    shared: tuple[Any, ...],
    progress: ProgressFn | None,
) -> list[T]:
    futures = [pool.submit(fn, item, *shared) for item in items]
    out: list[T] = []
    try:
        for i, fut in enumerate(futures):
            out.append(fut.result())
            if progress is not None:
                progress(phase, i + 1, len(items))
    except BaseException:
        for fut in futures:
            fut.cancel()
        raise
    return out
