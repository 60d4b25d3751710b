"""``fedcare experiment``: the paper's experiments as grids of runs, with tables and figures.

``fedcare experiment comparison|clients|disparity|ablation|privacy|selection|recommended`` runs one
experiment;
``fedcare experiment programme`` runs the comparison, the client sweep and the disparity sweep
one after another and reports the whole programme's wall time. Runs go through the experiment
engine on Dask (a local cluster of one worker process per core, or an existing cluster with
``--dask-address``; shared Stage 1, resumable); outputs land in ``<out>/<experiment>/`` (CSV and
Markdown tables, PNG figures) and, with ``--mlflow``, in one MLflow parent run per experiment.
With ``--sites SITES.json --schema federation.json`` the comparison or the ablation runs over
sites' own files, each cell as ``fedcare run --sites`` runs it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from fedcare.app.grid_options import GRID_OPTIONS, PROGRAMME_NAME, GridOption
from fedcare.cli.option_checks import declare_needs
from fedcare.experiments.cells import EXPERIMENTS
from fedcare_core.errors import ConfigError

if TYPE_CHECKING:
    from distributed import Client

    from fedcare.app.grid import PreparedGrid
    from fedcare.experiments.cells import Cell
    from fedcare.experiments.engine import CellOutcome, DataSpec, OnDone
    from fedcare.tracking.experiment_log import ExperimentOutputs
    from fedcare_core.config import ExperimentConfig

T = TypeVar("T")


def _items(text: str, convert: Callable[[str], T]) -> list[T]:
    """A comma-separated list, converted item by item: not empty, no empty item.

    A repeated value, or one out of range, is the grid service's to refuse (the option's
    declaration, :mod:`fedcare.app.grid_options`), as it is for a flow's list.

    Raises
    ------
    argparse.ArgumentTypeError
        An empty list or item, or an item ``convert`` refuses (argparse names the option in
        its one-line message).
    """
    items = [t.strip() for t in text.split(",")]
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a comma-separated list, got an empty list")
    if "" in items:
        raise argparse.ArgumentTypeError(f"an empty item in {text!r} (a stray comma?)")
    try:
        values = [convert(t) for t in items]
    except ValueError:
        raise argparse.ArgumentTypeError(f"cannot read {text!r} as a list of values") from None
    return values


def _list_of(convert: Callable[[str], Any]) -> Callable[[str], list[Any]]:
    return lambda text: _items(text, convert)


def _add_option(parser: argparse.ArgumentParser, option: GridOption) -> None:
    """One grid option as a flag (its value checked by the grid service, not here)."""
    flag = option.cli_flag
    if option.annotation is bool:  # a switch that turns the default off
        parser.add_argument(flag, dest=option.name, action="store_false", help=option.help)
        return
    kwargs: dict[str, Any] = {"dest": option.name, "default": option.default, "help": option.help}
    if option.item is not None:
        kwargs["type"] = _list_of(option.item)
        kwargs["metavar"] = "A,B,..."
    elif option.annotation in (int, int | None):
        kwargs["type"] = int
    if option.choices is not None:
        kwargs["choices"] = option.choices
    if option.metavar is not None:
        kwargs["metavar"] = option.metavar
    parser.add_argument(flag, **kwargs)


def add_parser(sub: Any) -> None:
    """Register ``fedcare experiment`` on the top-level subparsers."""
    exp = sub.add_parser(
        "experiment",
        help="run the paper's experiments (tables, figures, MLflow)",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    exp.add_argument("name", choices=[*EXPERIMENTS, PROGRAMME_NAME])
    for option in GRID_OPTIONS:
        if option.cli_flag:
            _add_option(exp, option)
    exp.add_argument("--mlflow", action="store_true", help="log each experiment to MLflow")
    exp.add_argument("--quiet", action="store_true", help="no per-run lines")
    declare_needs(exp, "--tracking-uri", "--mlflow", why="it is the store --mlflow logs to")


def _grid_request(args: argparse.Namespace) -> Any:
    """The :class:`~fedcare.app.grid.GridRequest` of parsed arguments."""
    from fedcare.app.grid import GridRequest

    options = {o.name: getattr(args, o.name) for o in GRID_OPTIONS if o.cli_flag}
    return GridRequest(args.name, options)


@dataclass
class DaskClientExecutor:
    """Runs a grid's jobs on a Dask cluster through its client (:func:`fedcare.grid.run_grid`)."""

    client: Client
    workers: int

    def run(
        self,
        cells: list[Cell],
        base: ExperimentConfig,
        spec: DataSpec,
        cells_dir: Path,
        on_done: OnDone,
    ) -> list[CellOutcome]:
        """Every cell's outcome, the unwritten ones run on the cluster."""
        from fedcare.app.grid_jobs import run_job
        from fedcare.grid import run_grid

        return run_grid(cells, base, spec, cells_dir, self.client, run_job, on_done=on_done)


@dataclass(frozen=True)
class _MlflowExperimentSink:
    """``--mlflow``: one MLflow parent run per experiment, its id printed."""

    tracking_uri: str | None
    dataset: str

    def record(self, outputs: ExperimentOutputs, params: Mapping[str, str]) -> dict[str, Any]:
        """Log the experiment; the run id for the timing document."""
        from fedcare.tracking import store
        from fedcare.tracking.experiment_log import log_experiment_run

        store.configure(self.tracking_uri)
        run_id = log_experiment_run(outputs, dataset=self.dataset, params=params)
        print(f"{outputs.experiment}: MLflow run {run_id}")
        return {"mlflow_run_id": run_id}


def cmd_experiment(args: argparse.Namespace) -> int:
    """Run one experiment or the programme; print where the outputs are and the wall time."""
    from fedcare.app.grid import check_grid_request, checked_data, run_grid_request
    from fedcare.grid import cluster_workers

    prepared = check_grid_request(_grid_request(args))
    # The same data checks as `fedcare run` and the flows, once, before any cluster starts.
    checked_data(prepared)
    with _cluster(args) as client:
        workers = cluster_workers(client)
        where = args.dask_address or "a local cluster"
        print(f"{args.name}: {workers} Dask worker(s) on {where}", flush=True)

        def say(experiment: str, outcome: CellOutcome, done: int, total: int) -> None:
            if not args.quiet:
                line = f"[{experiment} {done}/{total}] {outcome.cell.key}: {outcome.seconds:.1f} s"
                print(line, flush=True)

        sinks = [_MlflowExperimentSink(args.tracking_uri, prepared.dataset)] if args.mlflow else []
        report = run_grid_request(
            prepared,
            DaskClientExecutor(client, workers),
            gate=lambda _: None,  # checked above
            sinks=sinks,
            progress=say,
        )
    _print_report(prepared, report)
    return 0


def _print_report(prepared: PreparedGrid, report: Mapping[str, Any]) -> None:
    for experiment, entry in report["experiments"].items():
        print(f"{experiment}: {entry['cells']} runs in {entry['wall_s']:.0f} s → {entry['out']}")
    name = prepared.request.name
    print(f"{name}: {report['wall_s']:.0f} s wall on {report['workers']} worker(s)")


@contextmanager
def _cluster(args: argparse.Namespace) -> Iterator[Client]:
    """The grid's cluster (:func:`fedcare.grid.grid_client`); a refusal names ``--dask-address``."""
    from fedcare.grid import grid_client

    with ExitStack() as stack:
        try:
            client = stack.enter_context(grid_client(args.dask_address, args.workers))
        except ConfigError as exc:
            if args.dask_address is None:
                raise
            raise ConfigError(f"--dask-address: {exc}") from None
        yield client
