"""Training as Prefect tasks: the run pipeline's phases, each a task of the flow.

The flow does not orchestrate a run itself: it calls :func:`fedcare_core.run.pipeline.run_algorithm`
with a :class:`PrefectExecutor`, which runs each once-per-run phase (the rounds, the
evaluation) as a task in the flow's process and maps a per-client phase (FedCARE's Stage 2,
Local's fits) as one task per client. So the flow's results equal ``fedcare run``'s for the
same configuration and seed. No retries: a failed computation is a bug or bad data, not a
glitch. With a cache folder, FedCARE's rounds are the ``stage1`` task, cached across flow runs
(:mod:`tasks.stage1_cache`), so a flow run retried after a later failure does not redo them.

A per-client task runs on one of the flow's threads and hands its computation to a plain
``concurrent.futures`` process pool (:func:`worker_pool`, started when the flow starts): the
clients run in parallel processes at the speed of a bare process pool, and each still has its
own task run (state, duration). Mapping the tasks over Prefect's ``ProcessPoolTaskRunner``
instead costs about 0.25 s per task in Prefect's task engine around the worker (the call and
the flow-run context cloudpickled and hydrated, states and events forwarded back, the result
pickled) and 0.4–0.6 s before the first task starts (docs/BENCHMARKS.md, "Parallel Stage 2").
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from pathlib import Path
from typing import Any, TypeVar, cast

from prefect import task, unmapped

from fedcare_core.nn.training import ProgressFn
from fedcare_core.run import executors
from tasks.common import NO_CACHE, run_logger
from tasks.stage1_cache import cached_stage1_options

T = TypeVar("T")

#: Log a phase's progress every this many units (rounds, clients).
_PROGRESS_EVERY = 10


def progress_logger() -> ProgressFn:
    """A progress callback that logs every :data:`_PROGRESS_EVERY` units and the last."""
    logger = run_logger()

    def progress(stage: str, done: int, total: int) -> None:
        if done == total or done % _PROGRESS_EVERY == 0:
            logger.info("%s: %d/%d", stage, done, total)

    return progress


@task(name="phase", cache_policy=NO_CACHE, persist_result=False)
def _phase_task(fn: Callable[..., Any], args: Sequence[Any]) -> Any:
    """One once-per-run phase of a run (the task run is named after the phase)."""
    return fn(*args)


# Cached and persisted only with cached_stage1_options (never with Prefect's pickle).
@task(name="stage1", cache_policy=NO_CACHE, persist_result=False)
def _stage1_task(fn: Callable[..., Any], args: Sequence[Any], backend_name: str) -> Any:
    """The rounds phase, its result cached under the run's Stage 1 key (:mod:`tasks.stage1_cache`).

    ``backend_name`` is not used here: it is part of the cache key (the backend that runs the
    rounds is in ``args`` as an object).
    """
    return fn(*args)


@task(name="client", cache_policy=NO_CACHE, persist_result=False)
def _client_task(
    fn: Callable[..., Any], item: Any, shared: Sequence[Any], pool: Executor | None = None
) -> Any:
    """One client's task of a per-client phase: ``fn(item, *shared)``, in ``pool`` if given.

    The task itself runs on a thread of the flow process; with a pool it waits for the
    computation in a worker process (which receives this client's data only).
    """
    if pool is None:
        return fn(item, *shared)
    return pool.submit(fn, item, *shared).result()


def client_run_name(phase: str) -> Callable[[dict[str, Any]], str]:
    """The ``task_run_name`` of a per-client task: ``<phase>-client<id>``, e.g. ``stage2-client3``.

    Prefect calls it with the task's resolved parameters (it takes ``parameters``), so each
    mapped task run is named after its client instead of a random suffix.
    """

    def name(parameters: dict[str, Any]) -> str:
        client_id = getattr(parameters.get("item"), "client_id", None)
        return f"{phase}-client{client_id}" if client_id is not None else f"{phase}-client"

    return name


def worker_pool(workers: int) -> ProcessPoolExecutor:
    """The process pool a flow's per-client tasks compute in (``spawn``: fresh interpreters).

    Its workers ignore the terminal's Ctrl-C (:func:`fedcare_core.run.executors.worker_pool`).
    """
    return executors.worker_pool(workers)


class PrefectExecutor:
    """Runs a run's phases as Prefect tasks (see the module docstring).

    Parameters
    ----------
    pool
        The worker processes a per-client phase computes in (:func:`worker_pool`), its tasks
        mapped over the flow's threads; None: the tasks run one after another in the flow's
        process.
    map_over_runner
        Without a pool, map the tasks over the flow's task runner anyway, computing wherever
        it runs them (for the benchmark of Prefect's own process pool).
    stage1_cache
        The folder FedCARE's Stage 1 results are persisted in and looked up from
        (:mod:`tasks.stage1_cache`); None: the rounds are not cached.
    backend_name
        The backend the rounds run on (part of the Stage 1 cache key).
    """

    def __init__(
        self,
        pool: Executor | None = None,
        *,
        map_over_runner: bool = False,
        stage1_cache: Path | None = None,
        backend_name: str = "local",
    ) -> None:
        self.pool = pool
        self.map_over_runner = map_over_runner
        self.stage1_cache = stage1_cache
        self.backend_name = backend_name

    def run(self, phase: str, fn: Callable[..., T], /, *args: Any) -> T:
        """Run ``fn(*args)`` as the task ``phase``, in the flow's process (Stage 1 cached)."""
        if phase == "stage1" and self.stage1_cache is not None:
            cached = _stage1_task.with_options(**cached_stage1_options(self.stage1_cache))
            return cast(T, cached(fn, args, self.backend_name))
        return cast(T, _phase_task.with_options(name=phase)(fn, args))

    def map(
        self,
        phase: str,
        fn: Callable[..., T],
        items: Sequence[Any],
        /,
        *shared: Any,
        progress: ProgressFn | None = None,
    ) -> list[T]:
        """One ``<phase>-client`` task per item: ``fn(item, *shared)``, results in item order.

        Each task run is named after its client (:func:`client_run_name`).
        """
        # Prefect's protocol for a callable taking `parameters` also lists its own classmethod
        # (is_callback_with_parameters), which no plain function has; the call is what it checks.
        run_name = cast(Any, client_run_name(phase))
        named = _client_task.with_options(name=f"{phase}-client", task_run_name=run_name)
        if self.pool is not None or self.map_over_runner:
            futures = named.map(unmapped(fn), list(items), unmapped(shared), unmapped(self.pool))
            results: list[T] = []
            for i, future in enumerate(futures):
                results.append(future.result())
                if progress is not None:
                    progress(phase, i + 1, len(items))
            return results
        out: list[T] = []
        for i, item in enumerate(items):
            out.append(cast(T, named(fn, item, shared)))
            if progress is not None:
                progress(phase, i + 1, len(items))
        return out


def warm_up() -> int:
    """Import torch and the training code in this (worker) process; return its process id."""
    import fedcare_core.run.pipeline
    import fedcare_core.stage2.personalise  # noqa: F401

    return os.getpid()


@task(name="warm-up-worker", cache_policy=NO_CACHE, persist_result=False)
def warm_up_task(pool: Executor, index: int) -> int:
    """Start one worker of ``pool`` and import the training code in it; its process id.

    Submitted once per worker when the flow starts, so the workers' start-up (a new Python
    importing torch: seconds each) overlaps the data checks and Stage 1 instead of delaying
    Stage 2.

    Parameters
    ----------
    pool
        The flow's :func:`worker_pool`.
    index
        Which worker (for the task-run name only).

    Returns
    -------
    int
        The worker's process id.
    """
    return pool.submit(warm_up).result()


class WorkerPool:
    """The flow's worker processes for per-client tasks, started and warmed when it starts.

    Parameters
    ----------
    workers
        Processes (one per core by default, :func:`pool_size`).
    """

    def __init__(self, workers: int) -> None:
        self.pool = worker_pool(workers)
        self._warm = [warm_up_task.submit(self.pool, i) for i in range(workers)]

    def ready(self) -> list[int]:
        """Wait until every worker has started; their process ids."""
        return sorted({f.result() for f in self._warm})

    def close(self) -> None:
        """Stop the workers (tasks not started are cancelled)."""
        self.pool.shutdown(wait=True, cancel_futures=True)


def pool_size() -> int:
    """Worker processes of a flow's :class:`WorkerPool`: ``FEDCARE_STAGE2_WORKERS``, else CPUs."""
    configured = os.environ.get("FEDCARE_STAGE2_WORKERS")
    return int(configured) if configured else (os.cpu_count() or 1)
