"""An experiment's outputs on disk and in MLflow.

:func:`write_outputs` writes the tables (CSV, Markdown) and figures (PNG) of an experiment
from its cells' documents; :func:`log_experiment_run` records them as one MLflow parent run
(parameters, a nested run per table row with its mean and std over seeds, the same on the
parent under the row's name, every file as an artifact). Metric keys carry each objective's
metric, as the flow's (:mod:`fedcare.tracking.naming`): a row's
``test_over_seeds/readmission.auroc.pooled.mean``, the parent's
``test_over_seeds/fedcare-K10/readmission.auroc.pooled.mean``. Run documents hold no identifiers
(clients are numbered 0..K−1), so neither does anything logged here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from mlflow.entities import Metric

from fedcare.experiments.cells import Cell
from fedcare.experiments.report import experiment_tables
from fedcare.tracking import naming, store
from fedcare.tracking.experiment_plots import experiment_figures
from fedcare.tracking.log_run import log_batch_chunked, now_ms
from fedcare_core.files.atomic import write_atomic

#: Tag naming the experiment of a parent run (``comparison``, ``clients``, ...).
_TAG_EXPERIMENT = "fedcare.experiment"
#: Summary columns that measure cost, not a test metric.
_NOT_TEST = ("rounds_run", "seconds")


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
        write_atomic(path, text.encode())  # beside it, fsynced, renamed: never half a table
        files.append(path)
    files += experiment_figures(experiment, summary, out, dataset=dataset)
    return ExperimentOutputs(experiment, files, runs, summary)


#: The MLflow section of metrics over seeds on the clients' validation splits.
_VALIDATION_SECTION = "validation_over_seeds"


def row_metrics(
    row: Mapping[str, object], metrics: Mapping[str, str], group: str | None = None
) -> dict[str, float]:
    """A summary row's finite ``.mean``/``.std`` columns under unit-bearing metric keys.

    Parameters
    ----------
    row
        One row of :func:`~fedcare.experiments.summary.aggregate`'s frame: ``<objective>``
        (pooled) and ``<objective>.client_mean`` columns, ``avg_auroc``, ``rounds_run``,
        ``seconds``, each as ``.mean`` and ``.std``.
    metrics
        Objective → metric (the runs frame's ``attrs["metrics"]``).
    group
        The row's name on a parent run; ``None`` on the row's own run.

    Returns
    -------
    dict[str, float]
        ``test_over_seeds[/<group>]/<objective>.<metric>.<pooled|mean_over_clients>.<stat>``,
        ``…/avg_auroc.<stat>``; the validation columns (``.val``) under
        ``validation_over_seeds[/<group>]/…``; ``rounds_run.<stat>`` and ``seconds.<stat>`` on a
        row's run.
    """
    prefix = naming.SEEDS_SECTION if group is None else f"{naming.SEEDS_SECTION}/{group}"
    out: dict[str, float] = {}
    for col, value in row.items():
        name, _, stat = str(col).rpartition(".")
        if stat not in naming.SUMMARY_STATS or not _finite(value):
            continue
        objective, _, client_mean = name.partition(".")
        if name.endswith(".val"):  # validation, never under the test section's name
            base = name.removesuffix(".val")
            unit = f".{metrics[base]}.pooled" if base in metrics else ""
            where = _VALIDATION_SECTION if group is None else f"{_VALIDATION_SECTION}/{group}"
            key = f"{where}/{base}{unit}.{stat}"
        elif objective in metrics and client_mean in ("", "client_mean"):
            field = "mean_over_clients" if client_mean else "pooled"
            key = naming.summary_key(group, objective, metrics[objective], field, stat)
        elif name in _NOT_TEST:  # cost, not a test metric: on the row's run only
            if group is not None:
                continue
            key = f"{name}.{stat}"
        else:
            key = f"{prefix}/{name}.{stat}"
        out[key] = float(value)  # type: ignore[arg-type]
    return out


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
        tags={_TAG_EXPERIMENT: outputs.experiment, **dict(tags or {})},
        params=params,
    )
    try:
        experiment_id = mc.get_run(parent).info.experiment_id
        now = now_ms()
        units: Mapping[str, str] = outputs.runs.attrs.get("metrics", {})
        on_parent: dict[str, float] = {}
        for _, row in outputs.summary.iterrows():
            cells = {str(k): v for k, v in row.items()}
            name = _row_name(cells)
            child = store.create_child_run(
                experiment_id,
                parent_run_id=parent,
                run_name=name,
                tags={_TAG_EXPERIMENT: outputs.experiment},
            )
            metrics = [Metric(k, v, now, 0) for k, v in row_metrics(cells, units).items()]
            on_parent |= row_metrics(cells, units, name.replace(" ", "-"))
            setting = {
                "algorithm": str(row["algorithm"]),
                "variant": str(row["variant"]),
                "clients": str(int(row["clients"])),
                "rho": "default" if not _finite(row["rho"]) else f"{float(row['rho']):g}",
                "seeds": str(int(row["n"])),
            }
            log_batch_chunked(mc, child, metrics=metrics, params=setting)
            store.finish_run(child)
        summary = [Metric(k, v, now, 0) for k, v in on_parent.items()]
        log_batch_chunked(mc, parent, metrics=summary)
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
