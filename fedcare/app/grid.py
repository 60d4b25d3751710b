"""The ``grid`` service: one path from an experiment request to its tables, whatever runs it.

An experiment is a grid of runs (:mod:`fedcare.experiments`); running one is always the
same sequence, and only this module writes it:

1. :func:`check_grid_request`: every option (:data:`~fedcare.app.grid_options.GRID_OPTIONS`),
   the whole grid's configurations and the output folder, before any data is read or any
   cluster starts;
2. :func:`run_grid_request`: the data gate (the loader's and the raw tables' checks, once),
   then per experiment the grid on an executor (a Dask client, or the flow's Prefect tasks on
   Dask; cells already written are skipped, so an interrupted grid resumes), its tables and
   figures, and every sink (MLflow, Prefect artifacts); a timing document last.

``fedcare experiment`` and the experiment flows are adapters over these two calls: they turn
their inputs into a :class:`GridRequest`, choose the executor, the gate and the sinks, and
report.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from fedcare.app.grid_options import GRID_OPTIONS, OPTIONS_BY_NAME, GridOption, experiments_of
from fedcare_core.errors import ConfigError

if TYPE_CHECKING:
    from fedcare.experiments.cells import Cell
    from fedcare.experiments.engine import CellOutcome, DataSpec, OnDone
    from fedcare.tracking.experiment_log import ExperimentOutputs
    from fedcare_core.config import ExperimentConfig

#: The output folder's parent when none is given: ``.experiments/<dataset>``.
DEFAULT_OUT = Path(".experiments")


def cli_spelling(option: GridOption) -> str:
    """How ``fedcare experiment`` names an option in an error: its flag."""
    return option.cli_flag or option.name


def flow_spelling(option: GridOption) -> str:
    """How a flow names an option in an error: its parameter."""
    return option.flow_parameter or option.name


@dataclass(frozen=True)
class GridRequest:
    """An experiment (or the programme) and the options given to it.

    Parameters
    ----------
    name
        An experiment, or ``programme``.
    options
        Option name → value (:data:`~fedcare.app.grid_options.GRID_OPTIONS`); an option left
        out takes its default.
    """

    name: str
    options: Mapping[str, Any] = field(default_factory=dict)

    def value(self, name: str) -> Any:
        """The value of option ``name`` (its default when not given)."""
        return self.options.get(name, OPTIONS_BY_NAME[name].default)


@dataclass(frozen=True)
class PreparedGrid:
    """A request whose options, grid and output folder passed their checks.

    Attributes
    ----------
    request
        The request.
    base
        The configuration every cell starts from.
    cells
        Each experiment's cells, in the order they run.
    out
        The output folder (each experiment's tables in ``out/<experiment>``).
    cells_dir
        Where the cells' documents are (``out/cells/<fingerprint of base>``; over sites,
        ``-sites-<digest of the sites' files>`` added).
    spec
        Where each worker reads the dataset (or the sites' files).
    """

    request: GridRequest
    base: ExperimentConfig
    cells: dict[str, list[Cell]]
    out: Path
    cells_dir: Path
    spec: DataSpec

    @property
    def dataset(self) -> str:
        """The dataset, as the tables' titles and MLflow name it (over sites: the schema's)."""
        return self.request.value("dataset") if self.spec.sites is None else self.base.data.dataset


def _check_option(option: GridOption, value: Any, experiments: Sequence[str]) -> str | None:
    if value is None or value == option.default:
        return None
    if option.choices is not None and value not in option.choices:
        return f"unknown value {value!r}; choose from {list(option.choices)}"
    return None if option.check is None else option.check(value, experiments)


def check_options(request: GridRequest, spell: Callable[[GridOption], str]) -> None:
    """Check each given option's value on its own.

    Raises
    ------
    ConfigError
        An unknown option, or a value its declaration refuses, named as ``spell`` names it.
    """
    experiments = experiments_of(request.name)
    unknown = sorted(set(request.options) - set(OPTIONS_BY_NAME))
    if unknown:
        raise ConfigError(f"unknown grid option(s) {unknown}")
    for name, value in request.options.items():
        option = OPTIONS_BY_NAME[name]
        problem = _check_option(option, value, experiments)
        if problem is not None:
            joint = " " if problem.startswith("must ") else ": "
            raise ConfigError(f"{spell(option)}{joint}{problem}")
    if request.value("workers") is not None and request.value("dask_address") is not None:
        workers, address = OPTIONS_BY_NAME["workers"], OPTIONS_BY_NAME["dask_address"]
        raise ConfigError(
            f"{spell(workers)} sizes the local cluster; the cluster at {spell(address)} has "
            "its own workers"
        )
    _check_sites_options(request, spell)
    unused = [
        f"{spell(o)} (used by {', '.join(o.experiments or ())})"
        for o in GRID_OPTIONS
        if _given(request, o) and not o.used_by(experiments)
    ]
    if unused:
        raise ConfigError(
            f"{'; '.join(unused)}: the {request.name} experiment does not use "
            f"{'it' if len(unused) == 1 else 'them'}"
        )


def _given(request: GridRequest, option: GridOption) -> bool:
    value = request.value(option.name)
    return value is not None and value != option.default


def _check_sites_options(request: GridRequest, spell: Callable[[GridOption], str]) -> None:
    """``sites`` and ``schema`` together, and none of the options the sites decide.

    Raises
    ------
    ConfigError
        One of the two without the other, or options the sites decide (each named).
    """
    sites, schema = OPTIONS_BY_NAME["sites"], OPTIONS_BY_NAME["schema"]
    if _given(request, sites) != _given(request, schema):
        raise ConfigError(f"{spell(sites)} and {spell(schema)} go together: give both")
    if not _given(request, sites):
        return
    refused = [spell(o) for o in GRID_OPTIONS if o.by_sites and _given(request, o)]
    if refused:
        experiments = experiments_of(request.name)
        open_ = [
            spell(o)
            for o in GRID_OPTIONS
            if o.flow_parameter and not o.by_sites and o.used_by(experiments)
            and o not in (sites, schema)
        ]  # fmt: skip
        raise ConfigError(
            f"{', '.join(refused)}: decided by the sites and their schema ({spell(sites)}); "
            f"a grid over sites takes only {', '.join(open_)}"
        )


def _data_dir(given: str | None, base: ExperimentConfig) -> str | None:
    """The data folder given, else ``$FEDCARE_DATA_DIR`` (refused naming it if it names nothing).

    Resolved here, not in each worker, so that every run of the grid reads the same folder.
    """
    from fedcare_core.data.paths import checked_data_dir
    from fedcare_core.data.registry import get_dataset

    if given:
        return given
    env = os.environ.get("FEDCARE_DATA_DIR") or None
    if env is not None:
        checked_data_dir(None, looks_elsewhere=bool(get_dataset(base.data.dataset).definition_text))
    return env


def _base(request: GridRequest) -> ExperimentConfig:
    from fedcare.experiments.cells import grid_base

    base = grid_base(
        request.value("dataset"),
        rounds=request.value("rounds"),
        max_patients=request.value("max_patients"),
        stage2_epochs=request.value("stage2_epochs"),
    )
    data = {k: request.value(k) for k in ("unseen_categories", "features")}
    return base.with_overrides(data={k: v for k, v in data.items() if v is not None})


def experiment_grid(request: GridRequest, experiment: str) -> list[Cell]:
    """The cells of one of the request's experiments, shaped by its options."""
    from fedcare.experiments.cells import experiment_cells

    value = request.value
    given = {k: value(k) for k in ("ratios", "budgets") if value(k) is not None}
    return experiment_cells(
        experiment,
        value("seeds"),
        clients=value("clients"),
        counts=value("counts"),
        algorithms=value("algorithms"),
        variants=value("variants"),
        settings=value("settings"),
        features=value("features"),
        **given,
    )


def _sites_grid(
    request: GridRequest, spell: Callable[[GridOption], str]
) -> tuple[ExperimentConfig, dict[str, list[Cell]], str]:
    """Over sites: the base (the schema's), each experiment's cells (K the sites') and a digest.

    Each cell's configuration is what ``fedcare run --sites --algorithm A --seed S --rounds T``
    runs: the schema's, for as many clients as sites, with the schema's ρ.

    Raises
    ------
    ConfigError
        A bad schema or sites list (no site's file is read), named as ``spell`` names them.
    """
    from fedcare.app.sites_in_process import read_sites, sites_digest

    sites, schema_path = request.value("sites"), request.value("schema")
    try:
        schema, count = read_sites(schema_path, sites)
        digest = sites_digest(schema_path, sites)
    except ConfigError as exc:
        text = str(exc)
        if text.startswith("--sites "):  # the sites list's own wording, as this entry spells it
            text = spell(OPTIONS_BY_NAME["sites"]) + text.removeprefix("--sites")
        raise ConfigError(text) from None
    base = schema.run_config(seed=schema.config.seed, clients=count, rounds=request.value("rounds"))
    over_sites = replace(request, options={**request.options, "clients": count})
    cells = {
        e: [replace(c, rho=base.data.rho) for c in experiment_grid(over_sites, e)]
        for e in experiments_of(request.name)
    }
    return base, cells, digest


def check_grid_request(
    request: GridRequest, spell: Callable[[GridOption], str] = cli_spelling
) -> PreparedGrid:
    """Check the options, every cell's configuration and the output folder; nothing written.

    Parameters
    ----------
    request
        What to run.
    spell
        How an error names an option (:func:`cli_spelling`, :func:`flow_spelling`).

    Returns
    -------
    PreparedGrid
        The checked grid.

    Raises
    ------
    ConfigError
        Naming the option (or the grid cell and the configuration parameter) at fault.
    """
    from fedcare.app.path_roles import check_grid_paths
    from fedcare.experiments.cells import check_grid
    from fedcare.experiments.engine import DataSpec
    from fedcare_core.files.output_paths import check_output_dir
    from fedcare_core.resume.documents import cell_store

    check_options(request, spell)
    digest = None
    if request.value("sites") is None:
        base = _base(request)
        cells = {e: experiment_grid(request, e) for e in experiments_of(request.name)}
    else:
        base, cells, digest = _sites_grid(request, spell)
    for grid in cells.values():
        check_grid(grid, base)
    out_option = OPTIONS_BY_NAME["out"]
    given = request.value("out")
    default = request.value("dataset") if digest is None else f"{base.data.dataset}-sites"
    out = Path(given) if given is not None else DEFAULT_OUT / default
    check_grid_paths(request.value, lambda name: spell(OPTIONS_BY_NAME[name]), out)
    check_output_dir(out, what=spell(out_option))
    cells_dir = cell_store(out, base)
    if digest is None:
        spec = DataSpec(
            _data_dir(request.value("data_dir"), base), request.value("verify_checksum")
        )
    else:
        cells_dir = cells_dir.with_name(f"{cells_dir.name}-sites-{digest}")
        spec = DataSpec(None, sites=request.value("sites"), schema=request.value("schema"))
    return PreparedGrid(request, base, cells, out, cells_dir, spec)


class GridExecutor(Protocol):
    """Runs a grid's unwritten cells somewhere (a Dask client, Prefect tasks on Dask)."""

    @property
    def workers(self) -> int | None:
        """How many workers run the grid (None: an existing cluster's, not counted)."""
        ...

    def run(
        self,
        cells: list[Cell],
        base: ExperimentConfig,
        spec: DataSpec,
        cells_dir: Path,
        on_done: OnDone,
    ) -> list[CellOutcome]:
        """Run the cells whose documents are not in ``cells_dir``; every cell's outcome."""
        ...


class ExperimentSink(Protocol):
    """Where a finished experiment's outputs go (MLflow, Prefect artifacts)."""

    def record(self, outputs: ExperimentOutputs, params: Mapping[str, str]) -> Mapping[str, Any]:
        """Keep the outputs; what to add to the experiment's report (e.g. an MLflow run id)."""
        ...


#: ``progress(experiment, outcome, done, total)`` after each cell.
GridProgress = Callable[[str, "CellOutcome", int, int], None]
#: ``gate(prepared)``: the data checks, once, before any cell runs.
Gate = Callable[[PreparedGrid], None]


def checked_data(prepared: PreparedGrid) -> None:
    """The default gate: the loader's and the raw tables' checks (as ``fedcare run``'s).

    Over sites: every site's file read and checked as ``fedcare run --sites`` reads it (kept
    in this process for the cells run here), and split for each seed of the grid, so a site
    too small for a seed's split is refused before any cell runs.
    """
    from data_checks.source_checks import checked_dataset

    spec = prepared.spec
    if spec.sites is not None and spec.schema is not None:
        from fedcare.app.sites_in_process import read_sites_files

        read = read_sites_files(spec.schema, spec.sites)
        for seed in sorted({c.seed for cells in prepared.cells.values() for c in cells}):
            read.federation(seed)
        return
    checked_dataset(prepared.base.data, spec.data_dir, verify_checksum=spec.verify_checksum)


def experiment_params(
    prepared: PreparedGrid, experiment: str, workers: int | None
) -> dict[str, str]:
    """What an experiment's MLflow parent run records as its parameters."""
    from fedcare_core.resume.keys import base_fingerprint

    value = prepared.request.value
    params = {
        "experiment": experiment,
        "dataset": prepared.dataset,
        "seeds": str(value("seeds")),
        "cells": str(len(prepared.cells[experiment])),
        "rounds": str(prepared.base.stage1.rounds),
        "base_fingerprint": base_fingerprint(prepared.base),
        "workers": "cluster" if workers is None else str(workers),
        "dask_address": value("dask_address") or "local",
    }
    if prepared.spec.sites is not None:
        params["sites"] = prepared.spec.sites
    return params


def run_grid_request(
    prepared: PreparedGrid,
    executor: GridExecutor,
    *,
    gate: Gate = checked_data,
    sinks: Sequence[ExperimentSink] = (),
    progress: GridProgress | None = None,
) -> dict[str, Any]:
    """Gate the data, then run each experiment's grid, write its outputs and give them to sinks.

    Parameters
    ----------
    prepared
        From :func:`check_grid_request`.
    executor
        Where the cells run.
    gate
        The data checks, once, before any cell (:func:`checked_data`; the flows' are tasks).
    sinks
        Where each experiment's outputs go, in order.
    progress
        Called after each cell.

    Returns
    -------
    dict
        The timing document, also written to ``<out>/timing_<name>.json``: the workers, the
        whole wall time and per experiment its wall and CPU seconds, its cells, how many ran,
        its files and what the sinks added.
    """
    from fedcare.tracking.experiment_log import write_outputs
    from fedcare_core.files.atomic import write_json_atomic

    gate(prepared)
    t_all = time.perf_counter()
    value = prepared.request.value
    report: dict[str, Any] = {
        "workers": executor.workers,
        "dask_address": value("dask_address"),
        "experiments": {},
    }
    for experiment, cells in prepared.cells.items():
        t0 = time.perf_counter()

        def on_done(outcome: CellOutcome, done: int, total: int, name: str = experiment) -> None:
            if progress is not None:
                progress(name, outcome, done, total)

        outcomes = executor.run(cells, prepared.base, prepared.spec, prepared.cells_dir, on_done)
        out_dir = prepared.out / experiment
        outputs = write_outputs(
            experiment, cells, prepared.cells_dir, out_dir, dataset=prepared.dataset
        )
        entry: dict[str, Any] = {
            "wall_s": time.perf_counter() - t0,
            "cells": len(outcomes),
            "ran": sum(not o.skipped for o in outcomes),
            "cpu_s": sum(o.cpu_seconds for o in outcomes),
            "out": str(out_dir),
            "files": [str(p) for p in outputs.files],
        }
        params = experiment_params(prepared, experiment, executor.workers)
        for sink in sinks:
            entry.update(sink.record(outputs, params))
        report["experiments"][experiment] = entry
    report["wall_s"] = time.perf_counter() - t_all
    write_json_atomic(prepared.out / f"timing_{prepared.request.name}.json", report)
    return report
