"""Gradient-boosted references on exactly the federation of a FedCARE experiment cell.

For every seed and federation setting, the script builds the federation a cell of the
``recommended`` grid builds (:class:`~fedcare.experiments.cells.Cell`,
:func:`~fedcare.experiments.cells.grid_base`,
:func:`~fedcare_core.run.pipeline.prepare_federation`): the same clients, rows,
train/validation/test
splits and objectives. Every model sees a client's rows through the union view the Local and
Centralised bounds use (:func:`~fedcare_core.algorithms.union.features.union_federation`), and two
scikit-learn ``HistGradientBoosting`` references are scored per objective:

- ``gbm-local``: each client alone, one model per objective it pursues, trained on its own
  training rows, its iteration count chosen on its own validation rows, predicting its own test
  rows (the Local bound's information).
- ``gbm-pooled``: one model per objective on the pooled training rows of every client that
  pursues it (:func:`~fedcare_core.algorithms.bounds.rounds.pooled`), its iteration count chosen on
  the pooled validation rows, predicting every such client's test rows (the Centralised bound's
  information).

Iteration count: each model boosts up to ``--max-iter`` rounds with scikit-learn's early stopping
on the explicit validation rows (``X_val``/``y_val``, validation loss, ``--patience`` rounds
without improvement), and the iteration of lowest validation loss is deployed (staged
predictions), as the bounds deploy their best validation epoch. Binary objectives use the log
loss (no class weights: AUROC is rank-based); length of stay uses the absolute error on
``log1p(days)`` (its median, the MAE-optimal prediction, in the project's log space), and
predictions are turned back into days. The other hyper-parameters are scikit-learn's defaults;
nothing is tuned, and nothing is selected on test data.

The metrics are the project's: each objective's test predictions of every client pursuing it
are concatenated in client order (labelled rows only) and scored with
:func:`fedcare_core.objectives.metrics.compute_metric`, as
:func:`fedcare_core.evaluation.clients.evaluate` does,
so they compare with ``objectives.<name>.pooled`` of a cell's ``results.json`` (``.val``: the
same on the validation splits; ``avg_auroc``: the mean of the binary objectives' values).

Run from the repository root::

    FEDCARE_DATA_DIR=/work/shared/datasets python benchmarks/gbm_reference.py --seeds 10 \
        --clients 30 --settings iid,small --out docs/results/diabetes130/gbm_reference
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from threadpoolctl import threadpool_limits

from fedcare.experiments.cells import SETTINGS, Cell, grid_base
from fedcare.experiments.summary import mean_std
from fedcare_core.algorithms.bounds.rounds import pooled
from fedcare_core.algorithms.union.features import union_federation
from fedcare_core.config import FEATURE_SETS, ExperimentConfig
from fedcare_core.config.seeds import derive_seed
from fedcare_core.data.clients import ClientData, Federation
from fedcare_core.data.loading import LoadedDataset, load_dataset
from fedcare_core.evaluation.clinical import clinical_summary
from fedcare_core.objectives import compute_metric
from fedcare_core.run.pipeline import prepare_federation

METHODS = ("gbm-local", "gbm-pooled")
SPLITS = ("test", "val")
#: Predicts one objective (probabilities, or LOS in days) from union vectors.
Predictor = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class GBMParams:
    """Boosting budget and early stopping (everything else: scikit-learn's defaults).

    Parameters
    ----------
    max_iter
        Most boosting iterations.
    learning_rate
        Shrinkage.
    patience
        Iterations without a validation-loss improvement that end boosting.
    """

    max_iter: int = 500
    learning_rate: float = 0.1
    patience: int = 20


@dataclass
class FitStats:
    """What the fits of one method on one federation did."""

    models: int = 0
    iterations: list[int] = field(default_factory=list)
    fallbacks: int = 0


@dataclass
class Predictions:
    """Per split and objective, each client's labels and predictions (client order)."""

    y: dict[tuple[str, str], list[np.ndarray]] = field(default_factory=dict)
    p: dict[tuple[str, str], list[np.ndarray]] = field(default_factory=dict)

    def add(self, split: str, objective: str, y: np.ndarray, p: np.ndarray) -> None:
        """Append one client's labelled rows of ``split`` for ``objective``."""
        self.y.setdefault((split, objective), []).append(y)
        self.p.setdefault((split, objective), []).append(p)


def _constant(value: float) -> Predictor:
    return lambda x: np.full(len(x), value, dtype=np.float64)


def _best_iteration(model: Any) -> int:
    """1-based iteration of lowest validation loss (``validation_score_`` is −loss; [0]: none)."""
    scores = np.asarray(model.validation_score_, dtype=np.float64)
    return max(1, int(np.argmax(scores)))


def _staged(model: Any, kind: str, best: int) -> Predictor:
    """Predictions of ``model`` after ``best`` iterations, in label units."""

    def predict(x: np.ndarray) -> np.ndarray:
        if len(x) == 0:
            return np.zeros(0)
        stages = model.staged_predict_proba(x) if kind == "binary" else model.staged_predict(x)
        raw = np.asarray(next(itertools.islice(stages, best - 1, None)), dtype=np.float64)
        return raw[:, 1] if kind == "binary" else np.expm1(raw)

    return predict


def fit_objective(
    kind: str,
    train: tuple[np.ndarray, np.ndarray],
    val: tuple[np.ndarray, np.ndarray],
    params: GBMParams,
    random_state: int,
    stats: FitStats,
) -> Predictor:
    """Fit one objective's model with early stopping on ``val``; return its predictor.

    Parameters
    ----------
    kind
        ``"binary"`` or ``"regression"`` (LOS in days; fitted on ``log1p``).
    train, val
        Union vectors and one objective's labels (NaN: not labelled, dropped).
    params
        Boosting budget and patience.
    random_state
        scikit-learn's seed.
    stats
        Records the deployed iteration, or a fallback: a constant prediction (training
        prevalence or median) where the training rows cannot fit a model (one class, or under
        two rows).

    Returns
    -------
    Predictor
        Probabilities (binary) or days (regression) for union vectors.
    """
    x, y = train[0][np.isfinite(train[1])], train[1][np.isfinite(train[1])]
    xv, yv = val[0][np.isfinite(val[1])], val[1][np.isfinite(val[1])]
    binary = kind == "binary"
    stats.models += 1
    if len(y) < 2 or (binary and len(np.unique(y)) < 2):
        stats.fallbacks += 1
        if binary:
            return _constant(float(y.mean()) if len(y) else 0.5)
        return _constant(float(np.median(y)) if len(y) else 0.0)
    has_val = len(yv) > 0
    common: dict[str, Any] = {
        "max_iter": params.max_iter,
        "learning_rate": params.learning_rate,
        "early_stopping": has_val,
        "n_iter_no_change": params.patience,
        "scoring": "loss",
        "random_state": random_state,
    }
    model: Any
    if binary:
        model = HistGradientBoostingClassifier(loss="log_loss", **common)
        target, target_val = y.astype(np.int64), yv.astype(np.int64)
    else:
        model = HistGradientBoostingRegressor(loss="absolute_error", **common)
        target, target_val = np.log1p(y), np.log1p(yv)
    if has_val:
        model.fit(x, target, X_val=xv, y_val=target_val)
        best = _best_iteration(model)
    else:  # no validation label: the whole budget (counted as a fallback)
        model.fit(x, target)
        best = int(model.n_iter_)
        stats.fallbacks += 1
    stats.iterations.append(best)
    return _staged(model, kind, best)


def _labelled(client: ClientData, objective: str, split: str) -> tuple[np.ndarray, np.ndarray]:
    """A client's union vectors and labels of ``split`` for ``objective`` (NaN kept)."""
    data = client.split(split)
    return data.x_common, data.y[:, client.objectives.index(objective)]


def _score_client(
    out: Predictions, client: ClientData, objective: str, predictor: Predictor
) -> None:
    """Add a client's labelled test and validation predictions (as ``evaluate`` selects them)."""
    for split in SPLITS:
        x, y = _labelled(client, objective, split)
        mask = np.isfinite(y)
        pred = predictor(x[mask]) if mask.any() else np.zeros(0)
        out.add(split, objective, y[mask], pred)


def gbm_local(union: Federation, params: GBMParams, seed: int, stats: FitStats) -> Predictions:
    """Each client alone: a model per objective it pursues, on its own rows only."""
    kinds = {o.name: o.kind for o in union.objectives}
    out = Predictions()
    for client in union.clients:
        for objective in client.objectives:
            state = derive_seed(seed, "gbm-local", client.client_id, objective) % 2**32
            predictor = fit_objective(
                kinds[objective],
                _labelled(client, objective, "train"),
                _labelled(client, objective, "val"),
                params,
                state,
                stats,
            )
            _score_client(out, client, objective, predictor)
    return out


def gbm_pooled(union: Federation, params: GBMParams, seed: int, stats: FitStats) -> Predictions:
    """One model per objective on the pooled rows of the clients pursuing it."""
    objectives = list(union.objective_names)
    train = pooled(union.clients, objectives, "train")
    val = pooled(union.clients, objectives, "val")
    out = Predictions()
    for j, obj in enumerate(union.objectives):
        state = derive_seed(seed, "gbm-pooled", obj.name) % 2**32
        predictor = fit_objective(
            obj.kind, (train.x, train.y[:, j]), (val.x, val.y[:, j]), params, state, stats
        )
        for client in union.clients:  # client order, as evaluate() concatenates
            if obj.name in client.objectives:
                _score_client(out, client, obj.name, predictor)
    return out


def pooled_metrics(union: Federation, preds: Predictions) -> dict[str, float]:
    """Each objective's pooled metric on test (``<name>``) and validation (``<name>.val``)."""
    row: dict[str, float] = {}
    for split in SPLITS:
        suffix = "" if split == "test" else ".val"
        aurocs = []
        for obj in union.objectives:
            ys, ps = preds.y.get((split, obj.name)), preds.p.get((split, obj.name))
            value = math.nan
            if ys and ps:
                y, p = np.concatenate(ys), np.concatenate(ps)
                metric = compute_metric(obj.kind, y, p)
                value = math.nan if metric.value is None else metric.value
                if split == "test" and obj.kind == "binary":
                    row |= _clinical_columns(obj.name, y, p)
            row[f"{obj.name}{suffix}"] = value
            if obj.kind == "binary" and math.isfinite(value):
                aurocs.append(value)
        row[f"avg_auroc{suffix}"] = sum(aurocs) / len(aurocs) if aurocs else math.nan
    return row


#: The clinical metrics of a binary objective's pooled test risks in the tables (issue 31).
CLINICAL = ("auprc", "brier", "brier_reference", "calibration_slope", "ece")


def _clinical_columns(name: str, y: np.ndarray, p: np.ndarray) -> dict[str, float]:
    summary = clinical_summary("binary", y, p)
    return {f"{name}.{k}": math.nan if summary[k] is None else summary[k] for k in CLINICAL}


def cell_federation(
    loaded: LoadedDataset, base: ExperimentConfig, seed: int, clients: int, setting: str
) -> Federation:
    """The union view of the federation a ``recommended`` cell (``paper`` variant) builds."""
    config = Cell("centralised", seed, clients, None, "paper", setting).config(base).validate()
    federation = prepare_federation(loaded.cohort, loaded.partition, config, loaded.source)
    return union_federation(federation)[0]


def run_grid(
    loaded: LoadedDataset,
    base: ExperimentConfig,
    args: argparse.Namespace,
    params: GBMParams,
) -> pd.DataFrame:
    """Every seed × setting × method, one row each."""
    rows: list[dict[str, Any]] = []
    methods = {"gbm-local": gbm_local, "gbm-pooled": gbm_pooled}
    for setting in args.settings:
        for seed in range(args.seeds):
            t0 = time.perf_counter()
            union = cell_federation(loaded, base, seed, args.clients, setting)
            build_s = time.perf_counter() - t0
            for method, run in methods.items():
                t1, stats = time.perf_counter(), FitStats()
                metrics = pooled_metrics(union, run(union, params, seed, stats))
                row: dict[str, Any] = {
                    "setting": setting,
                    "clients": args.clients,
                    "seed": seed,
                    "method": method,
                    **metrics,
                    "models": stats.models,
                    "fallbacks": stats.fallbacks,
                    "mean_iterations": float(np.mean(stats.iterations))
                    if stats.iterations
                    else math.nan,
                    "seconds": time.perf_counter() - t1 + (build_s if method == METHODS[0] else 0),
                }
                rows.append(row)
                print(_progress(row, union), flush=True)
    return pd.DataFrame(rows)


def _progress(row: dict[str, Any], union: Federation) -> str:
    values = " ".join(f"{o}={row[o]:.4f}" for o in (*union.objective_names, "avg_auroc"))
    return f"{row['setting']} seed {row['seed']} {row['method']}: {values} ({row['seconds']:.1f}s)"


def _metric_names(frame: pd.DataFrame) -> list[str]:
    fixed = {"setting", "clients", "seed", "method", "models", "fallbacks", "mean_iterations"}
    return [c for c in frame.columns if c not in fixed | {"seconds"} and "." not in c]


def _clinical_names(frame: pd.DataFrame) -> list[str]:
    return [c for c in frame.columns if "." in c and not c.endswith(".val")]


def _table(frame: pd.DataFrame, metrics: Sequence[str], suffix: str) -> list[str]:
    head = "| setting | method | " + " | ".join(metrics) + " | mean iterations | fallbacks |"
    lines = [head, "| --- | --- |" + " ---: |" * (len(metrics) + 2)]
    for (setting, method), group in frame.groupby(["setting", "method"], sort=False):
        cells = []
        for m in metrics:
            col = group[f"{m}{suffix}"]
            cells.append(mean_std(float(col.mean()), float(col.std(ddof=1)), 4))
        iters = f"{group['mean_iterations'].mean():.0f}"
        fallbacks = f"{int(group['fallbacks'].sum())} / {int(group['models'].sum())}"
        lines.append(
            f"| {setting} | {method} | " + " | ".join(cells) + f" | {iters} | {fallbacks} |"
        )
    return lines


def write_markdown(
    frame: pd.DataFrame, path: Path, args: argparse.Namespace, params: GBMParams, wall_s: float
) -> None:
    """The mean ± std table (ddof 1 over seeds) per setting and method, with its header."""
    metrics = _metric_names(frame)
    seeds = sorted(frame["seed"].unique())
    header = [
        f"# Gradient-boosted references — {args.dataset}",
        "",
        f"K = {args.clients} clients; settings {', '.join(args.settings)}; seeds "
        f"{seeds[0]}–{seeds[-1]} ({len(seeds)}); features {args.features}; "
        f"max patients {args.max_patients or 'all'}. Written by `benchmarks/gbm_reference.py` "
        f"in {wall_s:.0f} s.",
        "",
        "Each seed and setting builds exactly the federation of a `recommended` cell (same "
        "clients, rows, splits, objectives; the union features of the Local / Centralised "
        "bounds). `gbm-local`: scikit-learn `HistGradientBoosting` per client and objective on "
        "that client's training rows alone. `gbm-pooled`: one such model per objective on the "
        "pooled training rows of every client pursuing it (the Centralised bound's "
        "information). Each model boosts up to "
        f"{params.max_iter} iterations (learning rate {params.learning_rate:g}) with early "
        f"stopping on its validation rows (patience {params.patience}) and deploys the "
        "iteration of lowest validation loss; binary: log loss, LOS: absolute error on "
        "log1p(days). Other hyper-parameters are scikit-learn's defaults: nothing is tuned, and "
        "nothing here is selected on test data.",
        "",
        "Metrics are pooled as in `results.json`'s `objectives.<name>.pooled`: AUROC for "
        "binary objectives, MAE in days for `los`; `avg_auroc` is the mean of the binary "
        "objectives' AUROC. Mean ± std over seeds (ddof 1). Fallbacks: models replaced by a "
        "constant (single-class or near-empty training rows) or without validation rows.",
        "",
        "## Pooled test metrics",
        "",
        *_table(frame, metrics, ""),
        "",
        "## Clinical metrics of the pooled test risks",
        "",
        "Binary objectives: AUPRC, Brier score and the base rate's (`brier_reference`), "
        "calibration slope, expected calibration error. A boosted model fitted on log loss "
        "is not reweighted and is not recalibrated.",
        "",
        *_table(frame, _clinical_names(frame), ""),
        "",
        "## Pooled validation metrics (used for early stopping)",
        "",
        *_table(frame, metrics, ".val"),
        "",
    ]
    path.write_text("\n".join(header))


def _names(text: str) -> list[str]:
    return [t for t in (s.strip() for s in text.split(",")) if t]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=10, help="seeds 0..N-1")
    parser.add_argument("--clients", type=int, default=30, help="K")
    parser.add_argument("--settings", type=_names, default=["iid", "small"])
    parser.add_argument("--features", choices=FEATURE_SETS, default="paper")
    parser.add_argument("--dataset", default="diabetes130")
    parser.add_argument("--max-patients", type=int, help="subsample the cohort (quick trials)")
    parser.add_argument("--data-dir", help="dataset folder (default: FEDCARE_DATA_DIR)")
    parser.add_argument("--max-iter", type=int, default=GBMParams.max_iter)
    parser.add_argument("--learning-rate", type=float, default=GBMParams.learning_rate)
    parser.add_argument("--patience", type=int, default=GBMParams.patience)
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="OpenMP threads of scikit-learn (default 1: on busy cores more threads spin and "
        "run many times slower)",
    )
    parser.add_argument("--out", type=Path, default=Path("docs/results/diabetes130/gbm_reference"))
    args = parser.parse_args(argv)
    unknown = [s for s in args.settings if s not in SETTINGS]
    if unknown:
        parser.error(f"unknown setting(s) {unknown}; choose from {list(SETTINGS)}")
    if min(args.seeds, args.clients, args.threads) < 1:
        parser.error("--seeds, --clients and --threads must be positive")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the references and write ``gbm_reference_runs.csv`` and ``gbm_reference.md``."""
    args = parse_args(argv)
    params = GBMParams(args.max_iter, args.learning_rate, args.patience)
    t0 = time.perf_counter()
    base = grid_base(args.dataset, max_patients=args.max_patients)
    if args.features != "paper":
        base = base.with_overrides(data={"features": args.features})
    loaded = load_dataset(base.data, args.data_dir)
    with threadpool_limits(args.threads):
        frame = run_grid(loaded, base, args, params)
    wall_s = time.perf_counter() - t0
    args.out.mkdir(parents=True, exist_ok=True)
    frame.to_csv(args.out / "gbm_reference_runs.csv", index=False)
    write_markdown(frame, args.out / "gbm_reference.md", args, params, wall_s)
    print(f"wrote {args.out} in {wall_s:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
