"""The ``programme`` service: several runs over one dataset, one data gate, shared federations.

A programme is the runs of one dataset's configurations (algorithms × seeds): the data gate
once (the raw tables' checks, then the load), each distinct federation built and checked once
(configurations that differ only in their algorithm share one), then each configuration run
through :func:`fedcare.app.run.execute_run` and handed to the front end. The Prefect ``fedcare``
flow is an adapter over it: its gate runs the checks as tasks and attaches their reports, its
observer names the step it is at and logs each run to MLflow.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from fedcare.app.run import PreparedRun, ResultSink, backend_runner, execute_run

if TYPE_CHECKING:
    from fedcare_core.config import ExperimentConfig
    from fedcare_core.data.clients import Federation
    from fedcare_core.data.loading import LoadedDataset
    from fedcare_core.nn.training import ProgressFn
    from fedcare_core.run.executors import Executor
    from fedcare_core.run.results import ExperimentResult


@dataclass(frozen=True)
class ProgrammeRequest:
    """What a programme runs: configurations of one dataset, its data, and the backend.

    Parameters
    ----------
    configs
        The validated configurations (one dataset), in the order they run.
    data_dir
        Dataset folder or file (None: ``$FEDCARE_DATA_DIR``, then the download cache).
    verify_checksum
        Check the Diabetes 130 file's published SHA-256.
    backend, backend_options
        A registered backend's name and its options.
    """

    configs: tuple[ExperimentConfig, ...]
    data_dir: str | None = None
    verify_checksum: bool = True
    backend: str = "local"
    backend_options: Mapping[str, Any] = field(default_factory=dict)


class DataGate(Protocol):
    """How a front end checks and loads a programme's data (e.g. as Prefect tasks)."""

    def load(self, request: ProgrammeRequest) -> LoadedDataset:
        """The dataset, through the raw tables' checks (raises on a failed check)."""
        ...

    def federation(
        self, loaded: LoadedDataset, config: ExperimentConfig, index: int
    ) -> tuple[Federation, float]:
        """The ``index``-th distinct federation, built and checked; the seconds it took."""
        ...


class ProgrammeObserver(Protocol):
    """What a front end does as a programme goes: steps, each run's sinks, each run's end."""

    def step(self, name: str) -> None:
        """The programme is now at step ``name`` (``validation``, ``training fedcare seed 0``…)."""
        ...

    def sinks(self, config: ExperimentConfig) -> Sequence[ResultSink]:
        """Where ``config``'s result goes (e.g. a ``results.json`` file)."""
        ...

    def finished(self, result: ExperimentResult, federation: int) -> dict[str, Any]:
        """Keep a finished run (e.g. log it to MLflow) and return its summary."""
        ...


def federation_key(config: ExperimentConfig) -> str:
    """Configurations with equal keys build the same federation (algorithm aside)."""
    settings = config.to_dict()
    return json.dumps(
        {"data": settings["data"], "seed": config.seed, "model": settings["model"]},
        sort_keys=True,
    )


def run_programme(
    request: ProgrammeRequest,
    gate: DataGate,
    observer: ProgrammeObserver,
    *,
    executor: Executor | None = None,
    progress: ProgressFn | None = None,
    notes: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Run every configuration of ``request``: gate, federations, runs; their summaries.

    Raises
    ------
    ConfigError
        An unknown backend or an invalid backend option.
    DataError, DataCheckError
        Data or a partition that fails its checks (the programme stops there).
    """
    from fedcare_core.run.results import DataProvenance

    loaded = gate.load(request)
    observer.step("validation")
    federations: dict[str, tuple[int, Federation, float]] = {}
    for config in request.configs:
        key = federation_key(config)
        if key not in federations:
            index = len(federations)
            federations[key] = (index, *gate.federation(loaded, config, index))
    summaries = []
    for config in request.configs:
        index, federation, seconds = federations[federation_key(config)]
        observer.step(f"training {config.algorithm} seed {config.seed}")
        prepared = PreparedRun(
            config,
            federation,
            DataProvenance.of(loaded.cohort),
            seconds,
            request.backend,
            backend_runner(request.backend, request.backend_options),
        )
        result = execute_run(
            prepared,
            executor=executor,
            progress=progress,
            sinks=observer.sinks(config),
            notes=notes,
        )
        observer.step(f"tracking {config.algorithm} seed {config.seed}")
        summaries.append(observer.finished(result, index))
    return summaries
