"""Tasks of the experiment flows: run a grid on the engine, write its outputs, log to MLflow."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from prefect import task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from fedcare_core.config import ExperimentConfig
from fedcare_core.experiments.cells import Cell
from fedcare_core.experiments.engine import CellOutcome, DataSpec, run_cells
from fedcare_tracking import store
from fedcare_tracking.experiment_log import ExperimentOutputs, log_experiment_run, write_outputs
from tasks.common import run_logger


@task(name="run-grid", cache_policy=NO_CACHE, persist_result=False)
def run_grid_task(
    cells: Sequence[Cell],
    base: ExperimentConfig,
    spec: DataSpec,
    cells_dir: Path,
    workers: int,
) -> list[CellOutcome]:
    """Run every cell on the experiment engine (worker processes; written cells are kept)."""
    logger = run_logger()

    def say(outcome: CellOutcome, done: int, total: int) -> None:
        logger.info("%d/%d %s: %.1f s", done, total, outcome.cell.key, outcome.seconds)

    return run_cells(cells, base, spec, cells_dir, workers=workers, on_done=say)


@task(name="write-experiment-outputs", cache_policy=NO_CACHE, persist_result=False)
def write_outputs_task(
    experiment: str, cells: Sequence[Cell], cells_dir: Path, out_dir: Path, dataset: str
) -> ExperimentOutputs:
    """CSV and Markdown tables and PNG figures; the Markdown report also as a Prefect artifact."""
    outputs = write_outputs(experiment, cells, cells_dir, out_dir, dataset=dataset)
    report = next(p for p in outputs.files if p.suffix == ".md")
    create_markdown_artifact(
        key=f"experiment-{experiment}",
        markdown=report.read_text(),
        description=f"{experiment} on {dataset}",
    )
    return outputs


@task(name="log-experiment", cache_policy=NO_CACHE, persist_result=False, retries=2)
def log_experiment_task(
    outputs: ExperimentOutputs,
    tracking_uri: str | None,
    dataset: str,
    params: Mapping[str, str],
    tags: Mapping[str, str],
    run_name: str | None,
) -> tuple[str, str]:
    """One MLflow parent run for the experiment; returns (tracking URI, run id)."""
    uri = store.configure(tracking_uri)
    run_id = log_experiment_run(
        outputs, dataset=dataset, params=params, tags=tags, run_name=run_name
    )
    return uri, run_id
