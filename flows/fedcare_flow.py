"""The ``fedcare`` flow: checks → partitions → Stage 1 → parallel Stage 2 → evaluation → MLflow.

Deployed as ``fedcare/full-experiment`` (``prefect.yaml``). One flow run is one MLflow parent
run in the dataset's experiment; each algorithm × seed is a nested run with a nested run per
client's Stage 2 (see :mod:`fedcare.tracking.log_run`). The raw tables are checked before
anything is loaded for training, and every client partition before Stage 1: a failed check
stops the flow with the failed expectations named, the report attached to the Prefect flow run
(Markdown artifact) and to the MLflow parent run, which is marked ``FAILED``. No MLflow run of
a failed flow run is ever left ``FINISHED``, except the nested runs of the algorithm × seed
combinations that completed before the failure.

Stage 2 runs every client at once: one ``stage2-client`` task per client, on the flow's
threads, each computing in a worker process of the flow's :class:`~tasks.training.WorkerPool`
(one per core, started when the flow starts; torch keeps the GIL for much of a small network's
step, so threads alone would not run them in parallel). Each client's random streams are keyed
by the seed and its id, so the results equal ``fedcare run``'s.

``backend="federation"`` is the re-training over real sites: no data is loaded or checked,
Stage 1 runs over the sites registered with a running coordinator, one nested run per seed
(:mod:`flows.federation_flow`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger
from prefect.runtime import flow_run as runtime_flow_run
from prefect.states import State
from prefect.task_runners import ThreadPoolTaskRunner

import fedcare.tracking  # noqa: F401  (MLflow telemetry off before mlflow is imported)
from data_checks.validate import CheckReport
from fedcare.app.path_roles import check_flow_paths
from fedcare.app.programme import ProgrammeRequest, run_programme
from fedcare.app.run import JsonFile, ResultSink
from fedcare.tracking.naming import config_setting_name
from fedcare_core.algorithms import get_algorithm
from fedcare_core.config import ExperimentConfig
from fedcare_core.data.clients import Federation
from fedcare_core.data.loading import LoadedDataset
from fedcare_core.errors import FedcareError
from fedcare_core.run.results import ExperimentResult
from flows.federation_flow import run_federation_pipeline
from flows.flow_parameters import (
    FEDERATION,
    GRID_SETTINGS,
    FlowParameters,
    as_tuple,
    check_output_dirs,
    expected_failure,
)
from flows.parameter_docs import FEDCARE_PARAMETERS, document_parameters
from flows.parent_run import ParentRun
from flows.setting_parameters import setting_descriptions, with_setting_parameters
from tasks.data import (
    DataRefused,
    load_dataset_task,
    partition_task,
    validate_partitions_task,
    validate_raw_task,
)
from tasks.stage1_cache import cache_folder
from tasks.tracking import TAG_FLOW_STATE, set_tags_task
from tasks.training import PrefectExecutor, WorkerPool, pool_size, progress_logger

#: Flow name (deployments are ``fedcare/<deployment>``).
_FLOW_NAME = "fedcare"
#: Where validation reports are written (one folder per flow run) unless told otherwise.
_DEFAULT_REPORTS_DIR = "results/validation"

_log = logging.getLogger(__name__)


def _start_workers(configs: Sequence[ExperimentConfig], parallel: bool) -> WorkerPool | None:
    """Start the worker processes now, if a per-client phase will use them (None: it won't).

    Their start-up (a new Python importing torch: seconds each) then overlaps the data checks
    and Stage 1.
    """
    if not parallel or not any(get_algorithm(c.algorithm).personal_phase for c in configs):
        return None
    return WorkerPool(pool_size())


def _end_open_mlflow_runs(flow: Any, flow_run: Any, state: Any) -> None:
    """Crash/cancellation hook: mark this flow run's unfinished MLflow runs ``KILLED``."""
    from fedcare.tracking import store
    from fedcare.tracking.log_run import TAG_FLOW_RUN_ID

    try:
        store.configure((flow_run.parameters or {}).get("tracking_uri"))
        mc = store.client()
        experiments = [e.experiment_id for e in mc.search_experiments()]
        runs = mc.search_runs(
            experiments,
            filter_string=f"tags.`{TAG_FLOW_RUN_ID}` = '{flow_run.id}' "
            "AND attributes.status = 'RUNNING'",
        )
        for run in runs:
            mc.set_tag(run.info.run_id, TAG_FLOW_STATE, str(state.name))
            mc.set_terminated(run.info.run_id, status="KILLED")
    except Exception:  # a hook must not mask the crash it reports
        _log.exception("could not mark the flow run's MLflow runs KILLED")


@flow(
    name=_FLOW_NAME,
    # Per-client tasks wait on threads; they compute in the flow's WorkerPool processes.
    task_runner=ThreadPoolTaskRunner(),  # type: ignore[arg-type]
    on_crashed=[_end_open_mlflow_runs],
    on_cancellation=[_end_open_mlflow_runs],
    validate_parameters=True,
)
@document_parameters({**FEDCARE_PARAMETERS, **setting_descriptions(GRID_SETTINGS)})
@with_setting_parameters(skip=GRID_SETTINGS)
def fedcare_pipeline(
    dataset: str = "diabetes130",
    data_dir: str | None = None,
    algorithm: str | list[str] = "fedcare",
    seeds: list[int] | int = 0,
    preset: str | None = None,
    backend: str = "local",
    config_file: str | None = None,
    overrides: dict[str, Any] | None = None,
    verify_checksum: bool = True,
    tracking_uri: str | None = None,
    register_model: bool = True,
    parallel_stage2: bool = True,
    reports_dir: str = _DEFAULT_REPORTS_DIR,
    out_dir: str | None = None,
    cache_stage1: bool = True,
    stage1_cache_dir: str | None = None,
    federation_state_dir: str | None = None,
    federation_schema: str | None = None,
    min_sites: int | None = None,
    **settings: Any,
) -> dict[str, Any] | State:
    """Check, train and track FedCARE on one dataset, for each algorithm × seed.

    Besides the parameters below, every configuration setting and Flower option offered by
    name is a parameter (``rounds``, ``clients``, ``stage2_epochs``, ``round_timeout``, …:
    :mod:`flows.setting_parameters`), as the ``fedcare run`` flag of the same name. Each
    parameter is described in :data:`flows.parameter_docs.FEDCARE_PARAMETERS` or by its
    setting's declaration, appended below as the ``Args:`` section Prefect's deployment form
    shows.

    With ``backend="federation"`` no data is loaded: Stage 1 runs over the sites registered
    with the coordinator of ``federation_state_dir``, once per seed
    (:func:`flows.federation_flow.run_federation_pipeline`).

    Returns
    -------
    dict or State
        Tracking URI, parent run id, and per algorithm × seed its run id, metrics and timings
        (backend ``"federation"``: per seed its run id, last λ* and ``w_star_sha256``);
        on an expected error (bad parameters, a failed data check) a ``Failed`` state with
        the one-line message (:func:`~flows.flow_parameters.expected_failure`).
    """
    try:
        # Every parameter and output folder checked before the MLflow parent run exists.
        params = FlowParameters.of(
            dataset=dataset,
            data_dir=data_dir,
            algorithms=as_tuple(algorithm),
            seeds=as_tuple(seeds),
            preset=preset,
            backend=backend,
            config_file=config_file,
            overrides=overrides if overrides is not None else {},
            federation_state_dir=federation_state_dir,
            federation_schema=federation_schema,
            min_sites=min_sites,
            **settings,
        ).validate()
        check_output_dirs(
            reports_dir=reports_dir, out_dir=out_dir, stage1_cache_dir=stage1_cache_dir
        )
        check_flow_paths(
            {"out_dir": out_dir, "reports_dir": reports_dir, "stage1_cache_dir": stage1_cache_dir},
            {
                "data_dir": data_dir, "dataset": dataset, "config_file": config_file,
                "federation_schema": federation_schema,
                "federation_state_dir": federation_state_dir, "tracking_uri": tracking_uri,
            },
        )  # fmt: skip
        if params.backend == FEDERATION:
            return run_federation_pipeline(params, tracking_uri=tracking_uri, out_dir=out_dir)
        return _run_pipeline(
            params,
            verify_checksum=verify_checksum,
            tracking_uri=tracking_uri,
            register_model=register_model,
            parallel_stage2=parallel_stage2,
            reports_dir=reports_dir,
            out_dir=out_dir,
            stage1_cache=cache_folder(stage1_cache_dir) if cache_stage1 else None,
        )
    except FedcareError as exc:  # expected: one line in the flow-run log, no traceback
        return expected_failure(exc)


def _run_pipeline(
    params: FlowParameters,
    *,
    verify_checksum: bool,
    tracking_uri: str | None,
    register_model: bool,
    parallel_stage2: bool,
    reports_dir: str,
    out_dir: str | None,
    stage1_cache: Path | None,
) -> dict[str, Any]:
    """The flow's work once its parameters are checked: the programme service, as tasks."""
    configs = params.experiment_configs()
    request = ProgrammeRequest(
        tuple(configs), params.data_dir, verify_checksum, params.backend, params.flower
    )
    flow_run_id = runtime_flow_run.id
    report_root = Path(reports_dir) / (flow_run_id or time.strftime("%Y%m%dT%H%M%S"))
    run = ParentRun.start(tracking_uri, params, [config_setting_name(c) for c in configs])
    workers = _start_workers(configs, parallel_stage2)
    try:
        gate = FlowDataGate(run, report_root)
        observer = FlowObserver(run, gate, workers, out_dir, register_model, params.backend)
        executor = PrefectExecutor(
            workers.pool if workers is not None else None,
            stage1_cache=stage1_cache,
            backend_name=params.backend,
        )
        runs = run_programme(
            request,
            gate,
            observer,
            executor=executor,
            progress=progress_logger(),
            notes=lambda note: get_run_logger().warning("stage 1: %s", note),
        )
        run.step = "results"
        run.publish(params.dataset, runs)
        run.status = "FINISHED"
    finally:
        if workers is not None:
            workers.close()
        run.close()
    return {"tracking_uri": run.uri, "parent_run_id": run.parent, "runs": runs}


class FlowDataGate:
    """The programme's data gate as this flow's tasks, each report attached to the parent run."""

    def __init__(self, run: ParentRun, report_root: Path) -> None:
        self.run = run
        self.report_root = report_root
        self.raw: CheckReport | None = None
        self.partitions: list[CheckReport] = []

    def load(self, request: ProgrammeRequest) -> LoadedDataset:
        """Check the raw tables (attach the report; stop on a failure), then load them."""
        first, data_dir, verify = request.configs[0], request.data_dir, request.verify_checksum
        where = {"artifact_path": "validation/raw", "stage": "raw tables", "key": "validation-raw"}
        try:
            raw = validate_raw_task(first.data, data_dir, self.report_root / "raw", verify)
        except DataRefused as refused:  # the task run failed; the flow reports it and stops
            self.run.attach(refused.report, **where)
            raise
        self.run.attach(raw, **where)
        self.raw = raw
        self.run.step = "loading"
        loaded = load_dataset_task(first, data_dir, verify)
        tags = {"fedcare.dataset_sha256": loaded.cohort.source_sha256}
        set_tags_task(self.run.uri, self.run.parent, tags)
        return loaded

    def federation(
        self, loaded: LoadedDataset, config: ExperimentConfig, index: int
    ) -> tuple[Federation, float]:
        """Build the federation and check its partitions (attach the report; stop on a failure)."""
        t0 = time.perf_counter()
        federation = partition_task(loaded.cohort, loaded.partition, config, loaded.source)
        seconds = time.perf_counter() - t0
        name = f"partitions-seed{config.seed}-{index}"
        checked = validate_partitions_task(
            federation, loaded.cohort, config, self.report_root / name
        )
        self.run.check(
            checked,
            artifact_path=f"validation/{name}",
            stage=f"client partitions (seed {config.seed})",
            key=f"validation-{name}",
        )
        self.partitions.append(checked)
        return federation, seconds


class FlowObserver:
    """The programme's steps on the parent run; each result to a file and logged to MLflow."""

    def __init__(
        self,
        run: ParentRun,
        gate: FlowDataGate,
        workers: WorkerPool | None,
        out_dir: str | None,
        register: bool,
        backend: str,
    ) -> None:
        self.run, self.gate, self.workers = run, gate, workers
        self.out_dir, self.register, self.backend = out_dir, register, backend

    def step(self, name: str) -> None:
        """Name the step (a failed flow run's ``fedcare.failed_at``)."""
        if name.startswith("training") and self.workers is not None:
            get_run_logger().info("Stage 2 worker processes ready: %s", self.workers.ready())
            self.workers = None  # said once
        self.run.step = name

    def sinks(self, config: ExperimentConfig) -> list[ResultSink]:
        """``results.json`` of the configuration in ``out_dir``, when the flow names one."""
        if self.out_dir is None:
            return []
        return [JsonFile(Path(self.out_dir) / _results_name(config))]

    def finished(self, result: ExperimentResult, federation: int) -> dict[str, Any]:
        """Log the run (nested) with its validation reports; its summary."""
        raw = self.gate.raw
        if raw is None:
            raise RuntimeError("a run finished before the raw tables were checked")
        extra = {
            "validation/raw": raw.report_dir,
            "validation/partitions": self.gate.partitions[federation].report_dir,
        }
        return self.run.log(result, self.backend, extra, register=self.register)


def _results_name(config: ExperimentConfig) -> str:
    """The file name of a configuration's ``results.json`` in ``out_dir``."""
    from fedcare_core.data.registry import dataset_label

    return f"{dataset_label(config.data.dataset)}-{config.algorithm}-seed{config.seed}.json"


def experiment_configs(**parameters: Any) -> Sequence[ExperimentConfig]:
    """The configurations a flow run with these parameters trains (for tools and tests)."""
    seeds = parameters.pop("seeds", 0)
    algorithm = parameters.pop("algorithm", "fedcare")
    return FlowParameters.of(
        algorithms=as_tuple(algorithm), seeds=as_tuple(seeds), **parameters
    ).experiment_configs()
