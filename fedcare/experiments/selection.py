"""Choosing a configuration on validation scores only (the ``selection`` experiment).

The rule, fixed before any run: for each objective, rank the variants by their mean pooled
validation metric over seeds (AUROC: higher first; MAE: lower first); the chosen variant has
the lowest mean rank over the objectives, ties going to the earlier variant of the grid.
No test metric is read.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

__all__ = ["choose_on_validation", "validation_ranks"]


def validation_ranks(summary: pd.DataFrame, metrics: Mapping[str, str]) -> pd.DataFrame:
    """Each variant's rank per objective on validation, and their mean (``mean_rank``).

    Parameters
    ----------
    summary
        :func:`~fedcare.experiments.summary.aggregate` of the selection's runs (one row per
        variant, with ``<objective>.val.mean``).
    metrics
        Objective → ``"auroc"`` or its error metric.

    Returns
    -------
    pandas.DataFrame
        ``variant``, ``<objective>.rank`` per objective and ``mean_rank``, in grid order.
    """
    out = pd.DataFrame({"variant": summary["variant"].to_numpy()})
    for name, metric in metrics.items():
        values = summary[f"{name}.val.mean"]
        out[f"{name}.rank"] = values.rank(
            ascending=metric != "auroc", method="min", na_option="bottom"
        ).to_numpy()
    ranks = [f"{name}.rank" for name in metrics]
    out["mean_rank"] = out[ranks].mean(axis=1)
    return out


def choose_on_validation(summary: pd.DataFrame, metrics: Mapping[str, str]) -> str:
    """The variant :func:`validation_ranks` puts first (the earlier one on a tie)."""
    ranks = validation_ranks(summary, metrics)
    best = int(ranks["mean_rank"].to_numpy().argmin())  # the first of equal ranks
    return str(ranks["variant"].iloc[best])
