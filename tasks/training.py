"""Training as Prefect tasks: the run pipeline's phases, each a task on the flow's runner.

The flow does not orchestrate a run itself: it calls :func:`fedcare_core.runner.run_algorithm`
with a :class:`PrefectExecutor`, which runs each once-per-run phase (the rounds, the
evaluation) as a task in the flow's process and maps a per-client phase (FedCARE's Stage 2,
Local's fits) over the flow's task runner, one task per client. So the flow's results equal
``fedcare run``'s for the same configuration and seed. No retries: a failed computation is a
bug or bad data, not a glitch.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

from prefect import task, unmapped

from fedcare_core.algorithms.base import Stage1Runner
from fedcare_core.errors import ConfigError
from fedcare_core.training import ProgressFn
from tasks.common import NO_CACHE, run_logger

T = TypeVar("T")

#: Stage 1 backends (``fedcare_flower.BACKENDS``; repeated so that importing this module does
#: not import Flower).
BACKENDS = ("local", "flower-sim", "flower-deployment")
#: Log a phase's progress every this many units (rounds, clients).
PROGRESS_EVERY = 10


def progress_logger() -> ProgressFn:
    """A progress callback that logs every :data:`PROGRESS_EVERY` units and the last."""
    logger = run_logger()

    def progress(stage: str, done: int, total: int) -> None:
        if done == total or done % PROGRESS_EVERY == 0:
            logger.info("%s: %d/%d", stage, done, total)

    return progress


def flower_backend(
    backend: str, flower_options: Mapping[str, Any] | None = None
) -> Stage1Runner | None:
    """The federated backend called ``backend`` (None for ``"local"``); Flower imported only here.

    Raises
    ------
    ConfigError
        For an unknown backend or Flower option.
    """
    if backend not in BACKENDS:
        raise ConfigError(f"unknown backend {backend!r}; expected one of {', '.join(BACKENDS)}")
    if backend == "local":
        return None
    from fedcare_flower.flower_options import FlowerConfig
    from fedcare_flower.runners import make_stage1_runner

    try:
        flower = FlowerConfig(**dict(flower_options or {})).validate()
    except TypeError as exc:
        raise ConfigError(f"unknown Flower option: {exc}") from None
    return make_stage1_runner(backend, flower)


@task(name="phase", cache_policy=NO_CACHE, persist_result=False)
def phase_task(fn: Callable[..., Any], args: Sequence[Any]) -> Any:
    """One once-per-run phase of a run (the task run is named after the phase)."""
    return fn(*args)


@task(name="client", cache_policy=NO_CACHE, persist_result=False)
def client_task(fn: Callable[..., Any], item: Any, shared: Sequence[Any]) -> Any:
    """One client's task of a per-client phase, in whatever worker process runs it."""
    return fn(item, *shared)


class PrefectExecutor:
    """Runs a run's phases as Prefect tasks (see the module docstring).

    Parameters
    ----------
    parallel
        Map a per-client phase over the flow's task runner (True) or run its tasks one after
        another in the flow's process.
    """

    def __init__(self, *, parallel: bool) -> None:
        self.parallel = parallel

    def run(self, phase: str, fn: Callable[..., T], /, *args: Any) -> T:
        """Run ``fn(*args)`` as the task ``phase``, in the flow's process."""
        return cast(T, phase_task.with_options(name=phase)(fn, args))

    def map(
        self,
        phase: str,
        fn: Callable[..., T],
        items: Sequence[Any],
        /,
        *shared: Any,
        progress: ProgressFn | None = None,
    ) -> list[T]:
        """One ``<phase>-client`` task per item: ``fn(item, *shared)``, results in item order."""
        named = client_task.with_options(name=f"{phase}-client")
        if self.parallel:
            futures = named.map(unmapped(fn), list(items), unmapped(shared))
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


@task(name="warm-up-worker", cache_policy=NO_CACHE, persist_result=False)
def warm_up_task(index: int) -> int:
    """Import torch and the training code in a fresh worker process; return its process id.

    Submitted once per worker when the flow starts, so the workers' start-up (a new Python,
    importing Prefect and torch: seconds each) overlaps Stage 1 instead of delaying Stage 2.

    Parameters
    ----------
    index
        Which worker (for the task-run name only).

    Returns
    -------
    int
        The worker's process id.
    """
    import fedcare_core.runner
    import fedcare_core.stage2  # noqa: F401

    return os.getpid()
