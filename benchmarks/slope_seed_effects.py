"""How much of a method's calibration slope on test is its split's, not its calibration (issue 31).

Every seed re-splits the same encounters into train, validation and test rows. A test split
whose patients differ from the validation rows moves every method's test slope alike, however
it is calibrated. This script reads a ``recommended`` experiment's runs
(``recommended_runs.csv``) and, per binary objective, takes as each seed's *split effect* the
mean test slope of two references fitted without a class weight to undo or a selection on
validation rows shared with the calibration — Centralised and fedxgb by default — and reports,
per method: its slopes' mean and spread over seeds, the seeds in 0.8–1.2, the correlation with
the split effect, and its slope relative to the split effect (mean and spread over seeds).
Nothing is tuned or selected here; it reads test metrics that the runs already report.

Run from the repository root::

    python benchmarks/slope_seed_effects.py \
        docs/results/diabetes130/recommended_admission_calibrated/recommended_runs.csv
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pandas as pd

OBJECTIVES = ("early_discharge", "readmission")
REFERENCES = ("centralised/paper", "fedxgb/paper")


def seed_effects(runs: pd.DataFrame, references: tuple[str, ...] = REFERENCES) -> pd.DataFrame:
    """One row per method and objective: slope spread, band count, and the split's share.

    Parameters
    ----------
    runs
        A ``recommended`` experiment's runs (columns ``algorithm``, ``variant``, ``seed`` and
        ``<objective>.calibration_slope``).
    references
        ``algorithm/variant`` names whose per-seed mean slope is the split effect.

    Returns
    -------
    pandas.DataFrame
        ``method``, ``objective``, ``slope_mean``, ``slope_sd``, ``in_band`` (seeds in 0.8–1.2
        of ``seeds``), ``corr_with_split``, ``relative_mean``, ``relative_sd``.
    """
    runs = runs.assign(method=runs["algorithm"] + "/" + runs["variant"])
    rows = []
    for objective in OBJECTIVES:
        table = runs.pivot_table(
            index="seed", columns="method", values=f"{objective}.calibration_slope"
        )
        missing = [r for r in references if r not in table.columns]
        if missing:
            raise SystemExit(f"the runs lack the reference method(s) {missing}")
        split = table[list(references)].mean(axis=1)
        for method in table.columns:
            slope = table[method]
            relative = slope / split
            rows.append(
                {
                    "method": method,
                    "objective": objective,
                    "slope_mean": slope.mean(),
                    "slope_sd": slope.std(),
                    "in_band": f"{int(((slope >= 0.8) & (slope <= 1.2)).sum())}/{len(slope)}",
                    "corr_with_split": float(np.corrcoef(slope, split)[0, 1]),
                    "relative_mean": relative.mean(),
                    "relative_sd": relative.std(),
                }
            )
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    """Print the table of :func:`seed_effects` for a runs file (Markdown)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", help="a recommended experiment's recommended_runs.csv")
    parser.add_argument(
        "--references",
        default=",".join(REFERENCES),
        help="algorithm/variant names, comma-separated",
    )
    args = parser.parse_args(argv)
    table = seed_effects(pd.read_csv(args.runs), tuple(args.references.split(",")))
    print("| " + " | ".join(table.columns) + " |")
    print("|" + " --- |" * len(table.columns))
    for row in table.itertuples(index=False):
        cells = [f"{v:.2f}" if isinstance(v, float) else str(v) for v in row]
        print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
