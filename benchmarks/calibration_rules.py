"""The calibration rules compared on the same trained models (issue 31).

For every seed, setting and method, the script trains the federation of a ``recommended``
grid cell once (``--calibration none``: the networks' own class-weighted risks), then
calibrates the same deployed models by each rule of the ``calibration`` setting and scores
every binary objective on the clients' test rows, pooled as the evaluation pools them:

- ``auto``: one recalibration across the clients (a shared slope if significant, site
  intercepts shrunk toward their mean; :mod:`fedcare_core.evaluation.federated_recalibration`);
- ``local``: each client's own closed test on its own validation rows;
- ``none``: the networks' class-weighted probabilities.

Columns: pooled AUROC, Brier score minus the base rate's, calibration slope, and the mean over
clients (with at least 50 labelled test rows) of ``|mean risk - observed rate|``. A diagnostic
beside them: the calibration slope of the class-weight-undone risks pooled on the validation
rows and on the test rows (``val_slope``, ``test_slope``): a validation slope above the test
slope means the validation rows flatter the model (they chose its Stage 2 epoch), which no
calibration fitted on them can see. Nothing here is selected on test data.

Run from the repository root::

    FEDCARE_DATA_DIR=/work/shared/datasets python benchmarks/calibration_rules.py --seeds 10 \
        --settings iid,dirichlet --out docs/results/diabetes130/calibration_rules
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from fedcare.experiments.cells import Cell, grid_base
from fedcare_core.config.variants import RECOMMENDED_CANDIDATE
from fedcare_core.evaluation.calibration import logit, sigmoid
from fedcare_core.evaluation.clinical import calibration_slope_intercept
from fedcare_core.objectives import make_loss
from fedcare_core.objectives.metrics import auroc

RULES = ("auto", "local", "none")
METHODS = {"preset": ("fedcare", RECOMMENDED_CANDIDATE), "fedavg": ("fedavg", "paper")}


def _inputs(split: Any) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.from_numpy(split.x_common), torch.from_numpy(split.x_private)


def _reweighted_slope(result: Any, objective: str, split: str) -> float:
    """Pooled slope of the class-weight-undone risks on ``split`` (the diagnostic)."""
    ys, ps = [], []
    for client, predictor in zip(result.federation.clients, result.predictors, strict=True):
        if objective not in client.objectives or objective not in predictor.objectives:
            continue
        j = client.objectives.index(objective)
        rows = getattr(client, split)
        weight = make_loss("binary", client.train.y[:, j]).pos_weight
        scores = np.clip(predictor.uncalibrated(*_inputs(rows), objective), 0.0, 1.0)
        keep = np.isfinite(rows.y[:, j])
        ys.append(rows.y[keep, j])
        ps.append(sigmoid(logit(scores[keep]) - np.log(weight)))
    fit = calibration_slope_intercept(np.concatenate(ys), np.concatenate(ps))
    return float(fit.slope) if fit.slope is not None else float("nan")


def _scored(result: Any, predictors: list[Any], objective: str) -> dict[str, float]:
    ys, ps, gaps = [], [], []
    for client, predictor in zip(result.federation.clients, predictors, strict=True):
        if objective not in client.objectives or objective not in predictor.objectives:
            continue
        j = client.objectives.index(objective)
        keep = np.isfinite(client.test.y[:, j])
        risk = predictor.calibration[objective].apply(
            np.clip(predictor.uncalibrated(*_inputs(client.test), objective), 0.0, 1.0)
        )[keep]
        y = client.test.y[keep, j]
        ys.append(y)
        ps.append(risk)
        if len(y) >= 50:
            gaps.append(abs(float(risk.mean() - y.mean())))
    y, p = np.concatenate(ys), np.concatenate(ps)
    slope = calibration_slope_intercept(y, p).slope
    return {
        "auroc": float(auroc(y, p).value or float("nan")),
        "brier_minus_reference": float(np.mean((p - y) ** 2) - np.mean((y.mean() - y) ** 2)),
        "slope": float(slope) if slope is not None else float("nan"),
        "client_rate_gap": float(np.mean(gaps)) if gaps else float("nan"),
    }


def run_cell(job: tuple[str, int, str, int, str | None]) -> list[dict[str, Any]]:
    """Train one cell uncalibrated, then score every rule on its models."""
    from fedcare_core.data.loading import load_dataset
    from fedcare_core.predict.calibrate import calibrate_predictors
    from fedcare_core.run.pipeline import run_experiment

    method, seed, setting, clients, data_dir = job
    algorithm, variant = METHODS[method]
    base = grid_base("diabetes130").with_overrides(data={"features": "admission"})
    config = Cell(algorithm, seed, clients, None, variant, setting).config(
        replace(base, calibration="none")
    )
    loaded = load_dataset(config.data, data_dir)
    result = run_experiment(loaded.cohort, loaded.partition, config, source=loaded.source)
    binary = dict.fromkeys(
        o
        for predictor in result.predictors
        for o, k in zip(predictor.objectives, predictor.kinds, strict=True)
        if k == "binary"
    )
    rows = []
    for rule in RULES:
        predictors = calibrate_predictors(result.federation, result.predictors, rule)
        for objective in binary:
            rows.append(
                {"method": method, "setting": setting, "seed": seed, "objective": objective}
                | {"rule": rule}
                | _scored(result, predictors, objective)
                | {
                    "val_slope": _reweighted_slope(result, objective, "val"),
                    "test_slope": _reweighted_slope(result, objective, "test"),
                }
            )
    return rows


def summarise(runs: pd.DataFrame) -> pd.DataFrame:
    """Per method, setting, objective and rule: means over seeds and slopes in 0.8–1.2."""
    grouped = runs.groupby(["setting", "method", "objective", "rule"], sort=True)
    out = grouped[
        ["auroc", "brier_minus_reference", "slope", "client_rate_gap", "val_slope", "test_slope"]
    ].mean()
    out["slope_std"] = grouped["slope"].std()
    out["slope_in_band"] = grouped["slope"].apply(lambda s: int(((s >= 0.8) & (s <= 1.2)).sum()))
    below = grouped["brier_minus_reference"].apply(lambda s: int((s < 0).sum()))
    out["brier_below_reference"] = below
    out["seeds"] = grouped["seed"].count()
    return out.reset_index()


def _markdown(frame: pd.DataFrame) -> str:
    def cell(v: Any) -> str:
        return f"{v:.4f}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(frame.columns) + " |", "|" + " --- |" * len(frame.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(False)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--settings", default="iid")
    parser.add_argument("--methods", default="preset,fedavg")
    parser.add_argument("--clients", type=int, default=30)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    jobs = [
        (method, seed, setting, args.clients, args.data_dir)
        for setting in args.settings.split(",")
        for method in args.methods.split(",")
        for seed in range(args.seeds)
    ]
    with ProcessPoolExecutor(args.workers) as pool:
        runs = pd.DataFrame([row for rows in pool.map(run_cell, jobs) for row in rows])
    args.out.mkdir(parents=True, exist_ok=True)
    runs.to_csv(args.out / "calibration_rules_runs.csv", index=False)
    summary = summarise(runs)
    summary.to_csv(args.out / "calibration_rules_summary.csv", index=False)
    (args.out / "calibration_rules.md").write_text(
        "# Calibration rules on the same models\n\n"
        f"`python benchmarks/calibration_rules.py --seeds {args.seeds} --settings "
        f"{args.settings} --clients {args.clients}`; admission-time features.\n\n"
        + _markdown(summary)
        + "\n"
    )
    print(summary.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
