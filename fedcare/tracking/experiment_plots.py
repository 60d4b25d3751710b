"""PNG figures of an experiment (paper Fig. 3–7), drawn from its summary frame.

The summary is :func:`fedcare.experiments.summary.aggregate`'s output: one row per setting
with ``<metric>.mean`` and ``<metric>.std`` columns. Error bars are ± one standard deviation
over seeds.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from fedcare.tracking.plots import PANEL_SIZE, save_figure


def _bars(summary: pd.DataFrame, metric: str, ylabel: str, title: str, path: Path) -> Path:
    fig = Figure(figsize=(PANEL_SIZE[0] * 1.3, PANEL_SIZE[1] * 1.2), layout="constrained")
    ax = fig.subplots()
    names = [str(a) for a in summary["algorithm"]]
    means = summary[f"{metric}.mean"].to_numpy(dtype=float)
    stds = summary[f"{metric}.std"].fillna(0.0).to_numpy(dtype=float)
    ax.bar(range(len(names)), means, yerr=stds, capsize=3, color="tab:blue", alpha=0.8)
    ax.set_xticks(range(len(names)), names, rotation=30, ha="right")
    finite = [m for m in means if math.isfinite(m)]
    if finite and metric != "los" and not metric.startswith("los"):
        low = min(finite) - 2 * (max(stds) if len(stds) else 0.0)
        ax.set_ylim(max(0.0, low - 0.02), min(1.0, max(finite) + max(stds) + 0.02))
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    return save_figure(fig, path)


def _lines(
    summary: pd.DataFrame, x: str, series: str, metric: str, ylabel: str, title: str, path: Path
) -> Path:
    fig = Figure(figsize=(PANEL_SIZE[0] * 1.2, PANEL_SIZE[1] * 1.2), layout="constrained")
    ax = fig.subplots()
    for name, group in summary.groupby(series, sort=False):
        group = group.sort_values(x)
        ax.errorbar(
            group[x],
            group[f"{metric}.mean"],
            yerr=group[f"{metric}.std"].fillna(0.0),
            marker="o",
            capsize=3,
            label=str(name),
        )
    ax.set_xlabel("K (clients)" if x == "clients" else "ρ (disparity ratio)")
    ax.set_xticks(sorted(set(summary[x])))
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", ncols=2)
    return save_figure(fig, path)


def _budget_label(variant: str) -> str:
    return "∞" if not variant.startswith("dp-eps") else variant.removeprefix("dp-eps")


def _privacy_lines(summary: pd.DataFrame, metric: str, ylabel: str, title: str, path: Path) -> Path:
    """One panel per K: ``metric`` against ε (∞: no DP), one line per method."""
    counts = sorted(set(summary["clients"]))
    fig = Figure(
        figsize=(PANEL_SIZE[0] * 1.1 * len(counts), PANEL_SIZE[1] * 1.2), layout="constrained"
    )
    axes = fig.subplots(1, len(counts), squeeze=False)[0]
    order = sorted(
        dict.fromkeys(summary["variant"]),
        key=lambda v: float(_budget_label(v).replace("∞", "inf")),
    )
    for ax, k in zip(axes, counts, strict=True):
        at_k = summary[summary["clients"] == k]
        for name, group in at_k.groupby("algorithm", sort=False):
            rows = group.set_index("variant").reindex(order)
            ax.errorbar(
                range(len(order)),
                rows[f"{metric}.mean"],
                yerr=rows[f"{metric}.std"].fillna(0.0),
                marker="o",
                capsize=3,
                label=str(name),
            )
        ax.set_xticks(range(len(order)), [_budget_label(v) for v in order])
        ax.set_xlabel("ε (client-level, δ = 1e-5)")
        ax.set_ylabel(ylabel)
        ax.set_title(f"{title}, K = {k}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    return save_figure(fig, path)


#: The line figures of the sweeps: experiment → (x column, axis word, figure name per metric).
_SWEEP_FIGURES = {
    "clients": ("clients", "K", {"avg_auroc": "fig5_avg_auroc_by_k", "los": "fig5_los_mae_by_k"}),
    "disparity": (
        "rho",
        "ρ",
        {"avg_auroc": "fig6_avg_auroc_by_rho", "los": "fig7_los_mae_by_rho"},
    ),
}
#: Each figure's metric: axis label and the title's words.
_METRIC_LABELS = {
    "avg_auroc": ("average AUROC (pooled)", "average AUROC"),
    "los": ("LOS MAE (days)", "length-of-stay MAE"),
}


def experiment_figures(
    experiment: str, summary: pd.DataFrame, out_dir: str | Path, *, dataset: str
) -> list[Path]:
    """Write the experiment's figures and return their paths.

    Parameters
    ----------
    experiment
        ``comparison`` (Fig. 3–4), ``clients`` (Fig. 5), ``disparity`` (Fig. 6–7),
        ``ablation`` or ``privacy`` (metrics against ε, one panel per K).
    summary
        The aggregated frame.
    out_dir
        Folder for the PNGs.
    dataset
        For the titles.

    Returns
    -------
    list[Path]
        The PNGs written.
    """
    out = Path(out_dir)
    metrics = ["avg_auroc", "los"] if "los.mean" in summary.columns else ["avg_auroc"]
    paths: list[Path] = []
    for metric in metrics:
        ylabel, words = _METRIC_LABELS[metric]
        if experiment in ("comparison", "ablation"):
            frame = summary
            if experiment == "ablation":
                frame = summary.assign(algorithm=summary["variant"] + " / " + summary["algorithm"])
                name = "ablation_avg_auroc" if metric == "avg_auroc" else "ablation_los_mae"
            else:
                name = "fig3_avg_auroc" if metric == "avg_auroc" else "fig4_los_mae"
            paths.append(_bars(frame, metric, ylabel, f"{dataset}: {words}", out / f"{name}.png"))
        elif experiment in _SWEEP_FIGURES:
            x, axis, names = _SWEEP_FIGURES[experiment]
            title = f"{dataset}: {ylabel.split(' (')[0]} by {axis}"
            path = out / f"{names[metric]}.png"
            paths.append(_lines(summary, x, "algorithm", metric, ylabel, title, path))
        elif experiment == "privacy":
            tag = "avg_auroc" if metric == "avg_auroc" else "los_mae"
            path = out / f"privacy_{tag}_by_epsilon.png"
            paths.append(_privacy_lines(summary, metric, ylabel, dataset, path))
    return paths
