"""``fedcare experiment``: the paper's experiments as grids of runs, with tables and figures.

``fedcare experiment comparison|clients|disparity|ablation|privacy|selection|recommended`` runs one
experiment;
``fedcare experiment programme`` runs the comparison, the client sweep and the disparity sweep
one after another and reports the whole programme's wall time. Runs go through the experiment
engine on Dask (a local cluster of one worker process per core, or an existing cluster with
``--dask-address``; shared Stage 1, resumable); outputs land in ``<out>/<experiment>/`` (CSV and
Markdown tables, PNG figures) and, with ``--mlflow``, in one MLflow parent run per experiment.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from fedcare.cli.options import add_unseen_categories_option
from fedcare_core.algorithms import ALGORITHM_NAMES, get_algorithm
from fedcare_core.config import DATASETS, FEATURE_SETS, RANGES, ExperimentConfig
from fedcare_core.errors import ConfigError
from fedcare_core.experiments.cells import (
    ABLATIONS,
    ALL_LABELS,
    CANDIDATES,
    CLIENT_COUNTS,
    DISPARITY_RATIOS,
    EXPERIMENTS,
    PRIVACY_BUDGETS,
    PRIVACY_COUNTS,
    PROGRAMME,
    RECOMMENDED_COUNTS,
    RECOMMENDED_SETTINGS,
    SELECTION_SETTINGS,
    SETTINGS,
    Cell,
    check_grid,
    experiment_cells,
    grid_base,
)
from fedcare_core.output_paths import check_output_dir

if TYPE_CHECKING:
    from distributed import Client

    from fedcare_core.experiments.engine import DataSpec

T = TypeVar("T")
#: The fewest clients of a federation (``data.clients``' lower bound).
MIN_CLIENTS = int(RANGES["data"]["clients"].low or 2)


def _items(text: str, convert: Callable[[str], T], what: str) -> list[T]:
    """A comma-separated list, converted item by item: not empty, no empty item, no repeat.

    Raises
    ------
    argparse.ArgumentTypeError
        An empty list or item, an item ``convert`` refuses, or a value given twice (argparse
        names the option in its one-line message).
    """
    items = [t.strip() for t in text.split(",")]
    if not text.strip():
        raise argparse.ArgumentTypeError(f"expected comma-separated {what}, got an empty list")
    if "" in items:
        raise argparse.ArgumentTypeError(f"an empty item in {text!r} (a stray comma?)")
    try:
        values = [convert(t) for t in items]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated {what}, got {text!r}") from None
    repeated = sorted({str(v) for i, v in enumerate(values) if v in values[:i]})
    if repeated:
        raise argparse.ArgumentTypeError(f"{', '.join(repeated)} given twice in {text!r}")
    return values


def _join(values: tuple[int, ...]) -> str:
    return ",".join(str(v) for v in values)


def _ints(text: str) -> list[int]:
    """``--counts``: client counts, each at least 2 (a federation)."""
    values = _items(text, int, "integers")
    if min(values) < MIN_CLIENTS:
        raise argparse.ArgumentTypeError(
            f"expected client counts ≥ {MIN_CLIENTS} (a federation), got {text!r}"
        )
    return values


def _floats(text: str) -> list[float]:
    """``--ratios``: numbers in (0, 1)."""
    values = _items(text, float, "numbers")
    if not all(0 < v < 1 for v in values):  # NaN fails both comparisons
        raise argparse.ArgumentTypeError(f"expected numbers in (0, 1), got {text!r}")
    return values


def _budgets(text: str) -> list[float | None]:
    """``--budgets``: positive ε values; ``inf`` is a run without DP."""
    values = _items(text, float, "numbers (inf: no DP)")
    if not all(v > 0 for v in values):  # NaN fails too
        raise argparse.ArgumentTypeError(f"expected positive ε values or inf, got {text!r}")
    return [None if math.isinf(v) else v for v in values]


def _names(text: str) -> list[str]:
    """``--algorithms``, ``--variants``: names."""
    return _items(text, str, "names")


def add_parser(sub: Any) -> None:
    """Register ``fedcare experiment`` on the top-level subparsers."""
    exp = sub.add_parser(
        "experiment",
        help="run the paper's experiments (tables, figures, MLflow)",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    exp.add_argument("name", choices=[*EXPERIMENTS, "programme"])
    exp.add_argument("--dataset", choices=DATASETS, default="diabetes130")
    exp.add_argument("--data-dir", help="dataset folder or file (default: $FEDCARE_DATA_DIR)")
    exp.add_argument("--seeds", type=int, default=10, help="seeds 0..n-1 (default 10)")
    exp.add_argument(
        "--clients",
        type=int,
        help="K of comparison/disparity/ablation (default 10) and selection (default 30)",
    )
    exp.add_argument(
        "--counts",
        type=_ints,
        help=f"client sweep K values (default {_join(CLIENT_COUNTS)}; privacy: "
        f"{_join(PRIVACY_COUNTS)}; recommended: {_join(RECOMMENDED_COUNTS)})",
    )
    exp.add_argument(
        "--budgets",
        type=_budgets,
        default=list(PRIVACY_BUDGETS),
        help="privacy experiment: client-level ε values, inf for no DP (default 1,3,8,inf)",
    )
    exp.add_argument(
        "--ratios", type=_floats, default=list(DISPARITY_RATIOS), help="disparity sweep ρ values"
    )
    exp.add_argument(
        "--algorithms",
        type=_names,
        help=f"comma-separated methods for comparison/clients (from {', '.join(ALGORITHM_NAMES)})",
    )
    exp.add_argument(
        "--variants",
        type=_names,
        help=f"ablations to run (default all: {', '.join(ABLATIONS)}); selection: candidates "
        f"(default all: {', '.join(CANDIDATES)})",
    )
    exp.add_argument(
        "--settings",
        type=_names,
        help=f"recommended and selection experiments: federation settings (from "
        f"{', '.join(SETTINGS)}; default {','.join(RECOMMENDED_SETTINGS)}; selection: "
        f"{','.join(SELECTION_SETTINGS)})",
    )
    exp.add_argument(
        "--features",
        choices=FEATURE_SETS,
        default="paper",
        help="feature partition of every run (Diabetes 130; see fedcare run --features)",
    )
    exp.add_argument("--rounds", type=int, help="Stage 1 / federated rounds T (default 100)")
    exp.add_argument("--max-patients", type=int, help="subsample the cohort (quick trials)")
    add_unseen_categories_option(exp)
    exp.add_argument("--stage2-epochs", type=int, help="Stage 2 / bounds epoch budget")
    exp.add_argument(
        "--workers",
        type=int,
        help="worker processes of the local Dask cluster (default: one per core)",
    )
    exp.add_argument(
        "--dask-address",
        metavar="tcp://HOST:PORT",
        help="run on an existing Dask cluster (its scheduler) instead of a local one; --out must "
        "then be a folder every worker reaches at the same path",
    )
    exp.add_argument("--out", type=Path, help="output folder (default .experiments/<dataset>)")
    exp.add_argument("--mlflow", action="store_true", help="log each experiment to MLflow")
    exp.add_argument(
        "--tracking-uri",
        help="with --mlflow: MLflow tracking URI (default $MLFLOW_TRACKING_URI, else the "
        "project's mlflow/mlflow.db)",
    )
    exp.add_argument("--no-verify", action="store_true", help="skip the dataset checksum")
    exp.add_argument("--quiet", action="store_true", help="no per-run lines")


def cmd_experiment(args: argparse.Namespace) -> int:
    """Run one experiment or the programme; print where the outputs are and the wall time."""
    from data_checks.source_checks import checked_dataset
    from fedcare.grid import cluster_workers
    from fedcare_core.experiments.engine import DataSpec, cell_store

    names = list(PROGRAMME) if args.name == "programme" else [args.name]
    base = check_options(args, names)
    out = args.out or Path(".experiments") / args.dataset
    cells_dir = cell_store(out, base)
    spec = DataSpec(args.data_dir or os.environ.get("FEDCARE_DATA_DIR"), not args.no_verify)
    # The same data checks as `fedcare run` and the flows, once, before any cluster starts.
    checked_dataset(base.data, spec.data_dir, verify_checksum=spec.verify_checksum)
    t_all = time.perf_counter()
    # One cluster for the whole programme: its workers keep their loaded dataset between
    # experiments.
    with _cluster(args) as client:
        workers = cluster_workers(client)
        where = args.dask_address or "a local cluster"
        print(f"{args.name}: {workers} Dask worker(s) on {where}", flush=True)
        timing: dict[str, Any] = {
            "workers": workers,
            "dask_address": args.dask_address,
            "experiments": {},
        }
        for name in names:
            timing["experiments"][name] = _run_experiment(
                name, args, base, spec, cells_dir, client, workers
            )
    timing["wall_s"] = time.perf_counter() - t_all
    (out / f"timing_{args.name}.json").write_text(json.dumps(timing, indent=2) + "\n")
    print(f"{args.name}: {timing['wall_s']:.0f} s wall on {workers} worker(s)")
    return 0


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


def _cells(name: str, args: argparse.Namespace) -> list[Cell]:
    return experiment_cells(
        name,
        args.seeds,
        clients=args.clients,
        counts=args.counts,
        ratios=args.ratios,
        algorithms=args.algorithms,
        variants=args.variants,
        budgets=args.budgets,
        settings=args.settings,
    )


def check_options(args: argparse.Namespace, names: list[str]) -> ExperimentConfig:
    """Check every option, the whole grid and ``--out`` before any work; the grid's base.

    Raises
    ------
    ConfigError
        Naming the option (or the grid cell and parameter) at fault.
    """
    if args.seeds < 1:
        raise ConfigError(f"--seeds must be ≥ 1, got {args.seeds}")
    if args.clients is not None and args.clients < MIN_CLIENTS:
        raise ConfigError(f"--clients must be ≥ {MIN_CLIENTS} (a federation), got {args.clients}")
    if args.workers is not None and args.workers < 1:
        raise ConfigError(f"--workers must be ≥ 1, got {args.workers}")
    if args.workers is not None and args.dask_address is not None:
        raise ConfigError("--workers sizes the local cluster; --dask-address has its own workers")
    if args.dask_address is not None:
        from fedcare.grid.cluster import check_address

        check_address(args.dask_address, "--dask-address")
    try:
        for algorithm in args.algorithms or []:
            if algorithm != ALL_LABELS or names != ["recommended"]:
                get_algorithm(algorithm)
    except ConfigError as exc:
        raise ConfigError(f"--algorithms: {exc}") from None
    known = CANDIDATES if names == ["selection"] else ABLATIONS
    unknown = [v for v in args.variants or [] if v not in known]
    if unknown:
        raise ConfigError(f"--variants: unknown variant(s) {unknown}; choose from {list(known)}")
    unknown = [v for v in args.settings or [] if v not in SETTINGS]
    if unknown:
        raise ConfigError(f"--settings: unknown setting(s) {unknown}; choose from {list(SETTINGS)}")
    base = grid_base(
        args.dataset,
        rounds=args.rounds,
        max_patients=args.max_patients,
        stage2_epochs=args.stage2_epochs,
    )
    if args.unseen_categories is not None:
        base = base.with_overrides(data={"unseen_categories": args.unseen_categories})
    if args.features != "paper":
        base = base.with_overrides(data={"features": args.features})
    for name in names:
        check_grid(_cells(name, args), base)
    check_output_dir(args.out or Path(".experiments") / args.dataset)
    return base


def _run_experiment(
    name: str,
    args: argparse.Namespace,
    base: ExperimentConfig,
    spec: DataSpec,
    cells_dir: Path,
    client: Client,
    workers: int,
) -> dict[str, Any]:
    """Run one experiment's grid on the cluster, write its outputs, log it; return its timing."""
    from fedcare.grid import run_grid
    from fedcare.tracking.experiment_log import log_experiment_run, write_outputs
    from fedcare_core.experiments.engine import CellOutcome, base_fingerprint

    out = args.out or Path(".experiments") / args.dataset
    cells = _cells(name, args)
    t0 = time.perf_counter()

    def say(outcome: CellOutcome, done: int, total: int) -> None:
        if not args.quiet:
            print(
                f"[{name} {done}/{total}] {outcome.cell.key}: {outcome.seconds:.1f} s", flush=True
            )

    outcomes = run_grid(cells, base, spec, cells_dir, client, on_done=say)
    outputs = write_outputs(name, cells, cells_dir, out / name, dataset=args.dataset)
    seconds = time.perf_counter() - t0
    print(f"{name}: {len(outcomes)} runs in {seconds:.0f} s → {out / name}")
    if args.mlflow:
        from fedcare.tracking import store

        store.configure(args.tracking_uri)
        run_id = log_experiment_run(
            outputs,
            dataset=args.dataset,
            params={
                "experiment": name,
                "seeds": str(args.seeds),
                "cells": str(len(cells)),
                "base_fingerprint": base_fingerprint(base),
                "rounds": str(base.stage1.rounds),
                "workers": str(workers),
            },
        )
        print(f"{name}: MLflow run {run_id}")
    return {
        "wall_s": seconds,
        "cells": len(outcomes),
        "ran": sum(not o.skipped for o in outcomes),
        "cpu_s": sum(o.cpu_seconds for o in outcomes),
    }
