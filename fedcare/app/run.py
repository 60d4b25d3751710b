"""The ``run`` service: one path from a request to a result, whatever front end asks for it.

A run is always the same sequence, and only this module writes it:

1. :func:`check_request` and :func:`backend_runner`: the backend is looked up in the registry
   (:mod:`fedcare_core.config.backends`), the algorithm checked against it (and secure aggregation),
   its options checked and its Stage 1 runner built, before any data is read;
2. :func:`prepare_run`: the data gate (the loader's and the Great Expectations checks of the
   raw tables, then of every client's partition) and the prepared federation;
3. :func:`execute_run`: :func:`fedcare_core.run.pipeline.run_algorithm` on an executor and the
   backend, then every sink (a JSON file, a run folder, MLflow, Prefect artifacts) given the
   result and its document.

:func:`run` is the whole sequence for a run kept in a run folder or not (``fedcare run``,
``--run-dir``, ``--resume``: :func:`open_kept_run`); the Prefect flow runs the same steps as its
tasks; a federation of sites prepares its own :class:`PreparedRun` (:mod:`fedcare.sites`) and
executes it here. The front ends parse their inputs into a :class:`RunRequest`, choose the
executor and the sinks, and report.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from fedcare_core.algorithms import backend_refusal, secagg_refusal
from fedcare_core.config.backends import get_backend
from fedcare_core.errors import ConfigError

if TYPE_CHECKING:
    from fedcare_core.algorithms.base import Stage1Runner
    from fedcare_core.config import ExperimentConfig
    from fedcare_core.data.clients import Federation
    from fedcare_core.data.loading import LoadedDataset
    from fedcare_core.nn.training import ProgressFn
    from fedcare_core.resume.run_folder import RunData, RunFolder
    from fedcare_core.run.executors import Executor
    from fedcare_core.run.results import DataProvenance, ExperimentResult
    from fedcare_core.stage1.types import Stage1Result


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
    stage1
        Stage 1's result when it already ran elsewhere (a site personalising from the ``w*``
        its federation broadcast; FedCARE-B scored from FedCARE's rounds): the rounds are then
        skipped.
    stage1_s
        The seconds that Stage 1 took, reported in the timing (None: not reported).
    shape_document
        How this run's document differs from the result's (a site reports only its own
        objectives, and itself); None: as it is.
    """

    config: ExperimentConfig
    federation: Federation
    provenance: DataProvenance
    partition_s: float
    backend: str = "local"
    runner: Stage1Runner | None = None
    stage1: Stage1Result | None = None
    stage1_s: float | None = None
    shape_document: Callable[[dict[str, Any]], dict[str, Any]] | None = None

    def spent(self) -> dict[str, float]:
        """The seconds already spent, as the result's timing reports them."""
        spent = {"partition_s": self.partition_s}
        return spent if self.stage1_s is None else {**spent, "stage1_s": self.stage1_s}

    def document(self, result: ExperimentResult) -> dict[str, Any]:
        """The result's ``results.json`` document, as this run reports it."""
        document = result.to_dict()
        return document if self.shape_document is None else self.shape_document(document)


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
        only), secure aggregation it cannot do, or k of n it cannot honour.
    """
    get_backend(request.backend)
    refusal = backend_refusal(request.config.algorithm, request.backend) or secagg_refusal(
        request.config, request.backend
    )
    if refusal is not None:
        raise ConfigError(refusal)
    options = request.backend_options
    quorum = (options.get("min_per_round"), options.get("round_deadline_s"))
    if quorum != (None, None):  # a value of the wrong type is refused with the options
        from fedcare.flower.flower_options import check_quorum_for
        from fedcare_core.algorithms import get_algorithm

        k = quorum[0] if isinstance(quorum[0], int) and not isinstance(quorum[0], bool) else None
        own = get_algorithm(request.config.algorithm).flower_strategy
        check_quorum_for(
            (k, quorum[1]), request.config.data.clients, own, request.config.stage1.secagg,
            ("--min-clients-per-round", "--round-deadline"),
        )  # fmt: skip


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
    from fedcare_core.run.results import DataProvenance

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
    from fedcare_core.run.pipeline import run_algorithm

    result = run_algorithm(
        prepared.federation,
        prepared.config,
        provenance=prepared.provenance,
        backend=prepared.runner,
        executor=executor,
        progress=progress,
        stage1=prepared.stage1,
        timing=prepared.spent(),
        backend_name=prepared.backend,
    )
    if notes is not None:
        for note in result.stage1.notes:
            notes(note)
    document = prepared.document(result)
    for sink in sinks:
        sink.write(result, document)
    return result


@dataclass(frozen=True)
class JsonFile:
    """Sink: the ``results.json`` document, written atomically to ``path``."""

    path: Path

    def write(self, result: ExperimentResult, document: dict[str, Any]) -> None:
        """Write ``document`` to :attr:`path` (a reader never sees half a file)."""
        from fedcare_core.files.atomic import write_json_atomic

        write_json_atomic(self.path, document)


@dataclass(frozen=True)
class RunFolderSink:
    """Sink: ``results.json`` of a run kept in a run folder (its completion mark)."""

    folder: RunFolder

    def write(self, result: ExperimentResult, document: dict[str, Any]) -> None:
        """Write the document into the run folder."""
        self.folder.write_results(document)


@dataclass(frozen=True)
class KeptRun:
    """A run folder to continue (``fedcare run --resume``): its request and recorded data."""

    folder: RunFolder
    request: RunRequest
    data: RunData

    @property
    def complete(self) -> bool:
        """Whether the run finished (its ``results.json`` is written)."""
        return self.folder.is_complete()


def open_kept_run(root: str | Path) -> KeptRun:
    """The run kept in folder ``root``: its configuration, data and backend, as a request.

    Raises
    ------
    ConfigError
        If ``root`` is not a run folder, or its files cannot be read.
    """
    from fedcare_core.resume.run_folder import RunFolder

    folder = RunFolder.open(Path(root))
    config, data = folder.read_config()
    backend = folder.read_backend()
    request = RunRequest(config, data.path, data.verify_checksum, backend.name, backend.options)
    return KeptRun(folder, request, data)


@dataclass(frozen=True)
class RunMessages:
    """What a run tells its front end as it goes (each None: nothing).

    Parameters
    ----------
    loading
        Called with the dataset's name before its files are read.
    stage1
        Called with each of Stage 1's notes (lost clients, objectives without an update).
    resume
        Called with where a kept run starts (a restored checkpoint) and what it resumes.
    options
        Called with the backend's options once they passed their checks (e.g. to warn that
        the Flower processes talk plain HTTP).
    """

    loading: Callable[[str], None] | None = None
    stage1: Callable[[str], None] | None = None
    resume: Callable[[str], None] | None = None
    options: Callable[[Mapping[str, Any]], None] | None = None


def run(
    request: RunRequest,
    *,
    option_names: Mapping[str, str] | None = None,
    run_dir: Path | None = None,
    resume: KeptRun | None = None,
    progress: ProgressFn | None = None,
    sinks: Sequence[ResultSink] = (),
    messages: RunMessages = RunMessages(),
) -> ExperimentResult:
    """A run from request to sinks: checks, data gate, federation, rounds, result.

    Parameters
    ----------
    request
        What to run (for ``resume``: :attr:`KeptRun.request`).
    option_names
        What error messages call each backend option (the CLI's flags).
    run_dir
        A new run folder to keep the run in (configuration, checkpoints, results), so that
        ``resume`` can finish it; probed before any data is read, created once its checks pass.
    resume
        A kept run to continue from its last checkpoint (its data must be the recorded data).
    progress
        ``progress(phase, done, total)``.
    sinks
        Where the result goes (after the run folder's ``results.json``).
    messages
        What the run says as it goes.

    Raises
    ------
    ConfigError
        A request the backend refuses, a bad backend option, an unusable run folder.
    DataError, DataCheckError
        Data that fails its checks (or is not the data a resumed run recorded).
    """
    from data_checks.source_checks import raw_source
    from fedcare_core.resume.run_folder import RunBackend, RunData, RunFolder

    check_request(request)
    raw_source(request.config.data.dataset, request.data_dir)  # no data: said before any work
    runner = backend_runner(request.backend, request.backend_options, option_names)
    if messages.options is not None:
        messages.options(request.backend_options)
    if run_dir is not None:  # probed now, made once the data checks pass
        RunFolder.check_new(run_dir)
    if messages.loading is not None:
        messages.loading(request.config.data.dataset)
    loaded = load_checked(request)
    folder = None
    if resume is not None:
        resume.folder.check_data(resume.data, loaded.cohort.source_sha256)
        folder = resume.folder
    prepared = prepare_run(request, loaded, runner)
    if run_dir is not None:
        folder = RunFolder.create(run_dir)
        data = RunData(
            str(Path(loaded.source).resolve()),
            request.verify_checksum,
            loaded.cohort.source_sha256,
        )
        recorded = RunBackend(request.backend, dict(request.backend_options))
        folder.write_config(request.config, data, recorded if runner is not None else None)
    if folder is not None:
        kept = kept_runner(folder, request.config.algorithm, runner, messages.resume)
        prepared = replace(prepared, runner=kept)
        sinks = (RunFolderSink(folder), *sinks)
    return execute_run(prepared, progress=progress, sinks=sinks, notes=messages.stage1)


def kept_runner(
    folder: RunFolder,
    algorithm: str,
    runner: Stage1Runner | None,
    say: Callable[[str], None] | None = None,
) -> Stage1Runner | None:
    """The Stage 1 runner of a run kept in ``folder`` (checkpointed when its class says so)."""
    if runner is None:
        return folder.stage1_runner(algorithm, say)
    from fedcare.flower.runners import run_folder_runner

    return run_folder_runner(runner, algorithm, folder.checkpoint_path, say)
