"""The ``fedcare`` flow run's MLflow parent run: checks, nested runs, results, its end.

The parent run is named by what the flow run runs (``flow · fedcare-K10-T100 · seed 0``,
:func:`fedcare.tracking.naming.parent_run_name`), the Prefect flow run's id and name kept as
its tags ``prefect.flow_run_id`` and ``prefect.flow_run_name``. Each data check's report is
attached to the parent run and to the Prefect flow run (a Markdown artifact linking the report
in the MLflow UI), each algorithm × seed is logged as a nested run (its backbone and every
client's model registered), and a completed flow run ends with one Markdown artifact
``fedcare-results``: the results table, linked to every MLflow run
(:func:`tasks.artifacts.results_markdown`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefect import get_run_logger
from prefect.runtime import flow_run as runtime_flow_run

from data_checks.validate import INDEX_HTML, CheckReport, require_checks_pass
from fedcare.tracking.links import report_location
from fedcare.tracking.naming import parent_run_name
from fedcare_core import __version__
from fedcare_core.data.registry import dataset_label
from fedcare_core.run.results import ExperimentResult
from flows.flow_parameters import FlowParameters
from tasks.artifacts import results_artifact_task, validation_artifact_task
from tasks.tracking import (
    TAG_FAILED_AT,
    TAG_FLOW_RUN_NAME,
    TAG_FLOW_STATE,
    experiment_id_task,
    finish_run_task,
    log_artifacts_task,
    log_experiment_task,
    log_parent_summary_task,
    register_task,
    set_tags_task,
    start_parent_run_task,
)

#: Key of the flow run's results artifact (the latest version is the latest flow run's).
_RESULTS_KEY = "fedcare-results"


def run_summary(result: ExperimentResult, run_id: str) -> dict[str, Any]:
    """One algorithm × seed's entry of the flow's result (and of its results table).

    Parameters
    ----------
    result
        The run's result.
    run_id
        Its nested MLflow run.

    Returns
    -------
    dict
        Algorithm, seed, K (``clients``), T (``rounds``), MLflow run id, rounds run, each
        objective's metric name and its pooled and mean-over-clients test value, its pooled
        clinical metrics (``objectives``), timings.
    """
    doc = result.to_dict()
    return {
        "algorithm": result.config.algorithm,
        "seed": result.config.seed,
        "clients": result.config.data.clients,
        "rounds": result.config.stage1.rounds,
        "mlflow_run_id": run_id,
        "rounds_run": doc["stage1"]["rounds_run"],
        "metrics": {s: o["metric"] for s, o in doc["objectives"].items()},
        "pooled": {s: o["pooled"] for s, o in doc["objectives"].items()},
        "mean_over_clients": {s: o["mean_over_clients"] for s, o in doc["objectives"].items()},
        "objectives": {
            s: {
                k: o[k]
                for k in ("metric", "pooled", "clinical", "intervals", "subgroups")
                if k in o
            }
            for s, o in doc["objectives"].items()
        },
        "timing": doc["timing"],
    }


@dataclass
class ParentRun:
    """The flow run's MLflow parent run, and how far the flow got (named if it fails)."""

    uri: str
    parent: str
    flow_run_id: str
    experiment_id: str
    status: str = "FAILED"
    step: str = "validation"

    @classmethod
    def start(
        cls, tracking_uri: str | None, params: FlowParameters, settings: list[str] | None = None
    ) -> ParentRun:
        """Start the parent run, named by what it runs, tagged with the Prefect flow run.

        Parameters
        ----------
        tracking_uri
            The store (None: the default one).
        params
            The flow run's parameters.
        settings
            The settings it runs (:func:`fedcare.tracking.naming.config_setting_name`);
            None: its algorithms.
        """
        flow_run_id, flow_run_name = runtime_flow_run.id, runtime_flow_run.name
        what = list(params.algorithms) if settings is None else settings
        uri, parent = start_parent_run_task(
            tracking_uri,
            params.dataset,
            run_name=parent_run_name(what, params.seeds),
            tags={
                "prefect.flow_run_id": str(flow_run_id),
                TAG_FLOW_RUN_NAME: str(flow_run_name),
                "fedcare.version": __version__,
                "fedcare.dataset": dataset_label(params.dataset),
                "fedcare.stage": "flow",
            },
            params=params.to_params(),
        )
        return cls(uri, parent, str(flow_run_id), experiment_id_task(uri, parent))

    def check(self, report: CheckReport, *, artifact_path: str, stage: str, key: str) -> None:
        """Attach a validation report to MLflow and Prefect, then stop if it failed."""
        self.attach(report, artifact_path=artifact_path, stage=stage, key=key)
        require_checks_pass(report)

    def attach(self, report: CheckReport, *, artifact_path: str, stage: str, key: str) -> None:
        """Attach a validation report (passed or failed) to MLflow and Prefect."""
        log_artifacts_task(self.uri, self.parent, report.report_dir, artifact_path)
        page = (
            report.html_report.relative_to(report.report_dir).as_posix()
            if report.html_report.is_relative_to(report.report_dir)
            else INDEX_HTML
        )
        where = report_location(self.uri, self.experiment_id, self.parent, artifact_path, page)
        validation_artifact_task(report, stage, key, where)

    def log(
        self, result: ExperimentResult, backend: str, extra: dict[str, Path], *, register: bool
    ) -> dict[str, Any]:
        """Log one algorithm × seed as a nested run (and register its models); its summary."""
        config = result.config
        run_id = log_experiment_task(
            self.uri,
            result,
            parent_run_id=self.parent,
            flow_run_id=self.flow_run_id,
            extra_artifacts=extra,
            backend=backend,
        )
        summary = run_summary(result, run_id)
        if register:
            summary |= register_task(self.uri, result, run_id).summary()
        get_run_logger().info("%s seed %d: %s", config.algorithm, config.seed, summary["pooled"])
        return summary

    def publish(self, dataset: str, runs: list[dict[str, Any]]) -> None:
        """The flow run's results table, linked to the MLflow runs, as a Prefect artifact."""
        results_artifact_task(
            _RESULTS_KEY, dataset, runs, self.uri, self.experiment_id, self.parent
        )

    def close(self) -> None:
        """Summarise the seeds on the parent run, tag the flow's outcome, then end the run."""
        tags = {TAG_FLOW_STATE: "Completed" if self.status == "FINISHED" else "Failed"}
        if self.status != "FINISHED":
            tags[TAG_FAILED_AT] = self.step
        try:
            log_parent_summary_task(self.uri, self.parent)  # over the runs that finished
            set_tags_task(self.uri, self.parent, tags)
        finally:
            finish_run_task(self.uri, self.parent, self.status)
