"""The ``run`` service: one path from a request to a result, whatever front end asks for it.

A run is always the same sequence, and only this module writes it:

1. :func:`check_request` and :func:`backend_runner`: the backend is looked up in the registry
   (:mod:`fedcare_core.backends`), the algorithm checked against it (and secure aggregation),
   its options checked and its Stage 1 runner built, before any data is read;
2. :func:`prepare_run`: the data gate (the loader's and the Great Expectations checks of the
   raw tables, then of every client's partition) and the prepared federation;
3. :func:`execute_run`: :func:`fedcare_core.runner.run_algorithm` on an executor and the
   backend, then every sink (a JSON file, a run folder, MLflow, Prefect artifacts) given the
   result and its document.

``fedcare run`` and the Prefect flow are adapters over these three calls: they parse their
inputs into a :class:`RunRequest`, choose the executor and the sinks, and report.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from fedcare_core.algorithms import backend_refusal, secagg_refusal
from fedcare_core.backends import get_backend
from fedcare_core.errors import ConfigError

if TYPE_CHECKING:
    from fedcare_core.algorithms.base import Stage1Runner
    from fedcare_core.config import ExperimentConfig
    from fedcare_core.data.clients import Federation
    from fedcare_core.datasets import LoadedDataset
    from fedcare_core.executors import Executor
    from fedcare_core.results import DataProvenance, ExperimentResult
    from fedcare_core.training import ProgressFn


@dataclass(frozen=True)
class RunRequest:
    """What to run: a configuration, its data, and where the federated rounds run.

    Parameters
    ----------
    config
        The validated configuration.
    data_dir
        Dataset folder or file (None: ``$FEDCARE_DATA_DIR``, then the download cache).
    verify_checksum
        Check the Diabetes 130 file's published SHA-256.
    backend
        A registered backend's name.
    backend_options
        Its options (``FlowerConfig`` fields for the Flower backends).
    """

    config: ExperimentConfig
    data_dir: str | None = None
    verify_checksum: bool = True
    backend: str = "local"
    backend_options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PreparedRun:
    """A run whose every input passed its checks: ready to execute.

    Parameters
    ----------
    config
        The configuration.
    federation
        The checked clients.
    provenance
        The data's checksum and loading notes.
    partition_s
        Seconds spent building and checking the federation.
    backend
        The backend's name (written into the result).
    runner
        Its Stage 1 runner (None: the in-process loop).
    """

    config: ExperimentConfig
    federation: Federation
    provenance: DataProvenance
    partition_s: float
    backend: str = "local"
    runner: Stage1Runner | None = None


class ResultSink(Protocol):
    """Where a finished run's result goes (a file, a run folder, MLflow, Prefect)."""

    def write(self, result: ExperimentResult, document: dict[str, Any]) -> None:
        """Keep ``result``; ``document`` is its ``results.json`` form."""
        ...


def check_request(request: RunRequest) -> None:
    """Refuse what the backend cannot run, before any data is read.

    Raises
    ------
    ConfigError
        An unknown backend, an algorithm it cannot run (PAFNet and the bounds run in process
        only), or secure aggregation it cannot do.
    """
    get_backend(request.backend)
    refusal = backend_refusal(request.config.algorithm, request.backend) or secagg_refusal(
        request.config, request.backend
    )
    if refusal is not None:
        raise ConfigError(refusal)


def backend_runner(
    name: str, options: Mapping[str, Any], option_names: Mapping[str, str] | None = None
) -> Stage1Runner | None:
    """The Stage 1 runner of registered backend ``name`` with ``options``, checked first.

    Raises
    ------
    ConfigError
        An unknown backend, or an invalid option (named as ``option_names`` says).
    """
    spec = get_backend(name)
    return cast("Stage1Runner | None", spec.build(spec.options_from(options, option_names)))


def load_checked(request: RunRequest) -> LoadedDataset:
    """The request's dataset, through the loader's and the raw tables' checks.

    Raises
    ------
    DataError, DataCheckError
        Naming the file, the column and the rows at fault.
    """
    from data_checks.source_checks import checked_dataset

    return checked_dataset(
        request.config.data, request.data_dir, verify_checksum=request.verify_checksum
    )


def prepare_run(
    request: RunRequest, loaded: LoadedDataset, runner: Stage1Runner | None
) -> PreparedRun:
    """Build the federation from checked data and check every client's partition.

    Raises
    ------
    DataError, DataCheckError
        A partition that fails its checks (a client without a positive label, …).
    """
    from data_checks.source_checks import checked_federation
    from fedcare_core.results import DataProvenance

    t0 = time.perf_counter()
    federation = checked_federation(loaded, request.config)
    return PreparedRun(
        request.config,
        federation,
        DataProvenance.of(loaded.cohort),
        time.perf_counter() - t0,
        request.backend,
        runner,
    )


def execute_run(
    prepared: PreparedRun,
    *,
    executor: Executor | None = None,
    progress: ProgressFn | None = None,
    sinks: Sequence[ResultSink] = (),
    notes: Callable[[str], None] | None = None,
) -> ExperimentResult:
    """Run the prepared federation and give the result to every sink, in order.

    Parameters
    ----------
    prepared
        From :func:`prepare_run` (or a front end's own preparation, e.g. sites' files).
    executor
        Runs the phases (in process by default; the flow's tasks; worker processes).
    progress
        ``progress(phase, done, total)``.
    sinks
        Where the result goes.
    notes
        Called with each of Stage 1's notes (lost clients, objectives without an update).

    Returns
    -------
    ExperimentResult
        The result, its ``backend`` the prepared run's.
    """
    from fedcare_core.runner import run_algorithm

    result = run_algorithm(
        prepared.federation,
        prepared.config,
        provenance=prepared.provenance,
        backend=prepared.runner,
        executor=executor,
        progress=progress,
        timing={"partition_s": prepared.partition_s},
        backend_name=prepared.backend,
    )
    if notes is not None:
        for note in result.stage1.notes:
            notes(note)
    document = result.to_dict()
    for sink in sinks:
        sink.write(result, document)
    return result


@dataclass(frozen=True)
class JsonFile:
    """Sink: the ``results.json`` document, written atomically to ``path``."""

    path: Path

    def write(self, result: ExperimentResult, document: dict[str, Any]) -> None:
        """Write ``document`` to :attr:`path` (a reader never sees half a file)."""
        from fedcare_core.atomic_files import write_json_atomic

        write_json_atomic(self.path, document)
