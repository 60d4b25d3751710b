"""An experiment's outputs on disk and in MLflow.

:func:`write_outputs` writes the tables (CSV, Markdown) and figures (PNG) of an experiment
from its cells' documents; :func:`log_experiment_run` records them as one MLflow parent run
(parameters, a nested run per table row with its mean and std over seeds, every file as an
artifact). Run documents hold no identifiers (clients are numbered 0..K−1), so neither does
anything logged here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from mlflow.entities import Metric

from fedcare_core.experiments.cells import Cell
from fedcare_core.experiments.report import experiment_tables
from fedcare_tracking import store
from fedcare_tracking.experiment_plots import experiment_figures
from fedcare_tracking.log_run import log_batch_chunked, now_ms

#: Tag naming the experiment of a parent run (``comparison``, ``clients``, ...).
TAG_EXPERIMENT = "fedcare.experiment"


@dataclass(frozen=True)
class ExperimentOutputs:
    """What :func:`write_outputs` wrote: files, per-run rows and the summary."""

    experiment: str
    files: list[Path]
    runs: pd.DataFrame
    summary: pd.DataFrame


def write_outputs(
    experiment: str,
    cells: Sequence[Cell],
    cells_dir: str | Path,
    out_dir: str | Path,
    *,
    dataset: str,
) -> ExperimentOutputs:
    """Write the experiment's CSV and Markdown tables and PNG figures into ``out_dir``.

    Parameters
    ----------
    experiment
        ``comparison``, ``clients``, ``disparity`` or ``ablation``.
    cells
        Its grid; every cell's document must be in ``cells_dir``.
    cells_dir
        The engine's output folder.
    out_dir
        Folder for the tables and figures (created).
    dataset
        For titles.

    Returns
    -------
    ExperimentOutputs
        The files written and the frames behind them.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    texts, runs, summary = experiment_tables(experiment, cells, cells_dir, dataset=dataset)
    files: list[Path] = []
    for name, text in texts.items():
        path = out / name
        tmp = path.with_name(f".{name}.tmp")
        tmp.write_text(text)
        tmp.replace(path)
        files.append(path)
    files += experiment_figures(experiment, summary, out, dataset=dataset)
    return ExperimentOutputs(experiment, files, runs, summary)


def _row_name(row: Mapping[str, object]) -> str:
    parts = [str(row["algorithm"])]
    if row.get("variant") not in (None, "paper"):
        parts.insert(0, str(row["variant"]))
    parts.append(f"K{row['clients']}")
    rho = row.get("rho")
    if isinstance(rho, float) and not math.isnan(rho):
        parts.append(f"rho{rho:g}")
    return " ".join(parts)


def log_experiment_run(
    outputs: ExperimentOutputs,
    *,
    dataset: str,
    params: Mapping[str, str],
    tags: Mapping[str, str] | None = None,
    run_name: str | None = None,
) -> str:
    """Log an experiment as an MLflow parent run with a nested run per setting.

    Parameters
    ----------
    outputs
        :func:`write_outputs`'s result.
    dataset
        Selects the MLflow experiment (``fedcare/<dataset>``).
    params
        The experiment's parameters (grid, seeds, rounds, ...).
    tags
        Extra tags (e.g. the Prefect flow-run id).
    run_name
        The parent run's name (default: the experiment's).

    Returns
    -------
    str
        The parent run's id (finished).
    """
    mc = store.client()
    parent = store.start_parent_run(
        dataset,
        run_name=run_name or f"experiment-{outputs.experiment}",
        tags={TAG_EXPERIMENT: outputs.experiment, **dict(tags or {})},
        params=params,
    )
    try:
        experiment_id = mc.get_run(parent).info.experiment_id
        now = now_ms()
        for _, row in outputs.summary.iterrows():
            child = store.create_child_run(
                experiment_id,
                parent_run_id=parent,
                run_name=_row_name({str(k): v for k, v in row.items()}),
                tags={TAG_EXPERIMENT: outputs.experiment},
            )
            metrics = [
                Metric(str(col), float(value), now, 0)
                for col, value in row.items()
                if str(col).endswith((".mean", ".std")) and _finite(value)
            ]
            setting = {
                "algorithm": str(row["algorithm"]),
                "variant": str(row["variant"]),
                "clients": str(int(row["clients"])),
                "rho": "default" if not _finite(row["rho"]) else f"{float(row['rho']):g}",
                "seeds": str(int(row["n"])),
            }
            log_batch_chunked(mc, child, metrics=metrics, params=setting)
            store.finish_run(child)
        for path in outputs.files:
            folder = "figures" if path.suffix == ".png" else "tables"
            mc.log_artifact(parent, str(path), artifact_path=folder)
    except BaseException:
        store.finish_run(parent, "FAILED")
        raise
    store.finish_run(parent)
    return parent


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)
