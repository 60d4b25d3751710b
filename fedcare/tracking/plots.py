"""PNG charts of a run, drawn from the ``results.json`` document.

Figures are built with :class:`matplotlib.figure.Figure` and rendered by the Agg canvas
directly, so nothing touches pyplot's global state or needs a display.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

#: Resolution of the PNGs.
_DPI = 100
#: Width and height (inches) of one panel.
PANEL_SIZE = (6.0, 3.2)
#: ‖d‖² is drawn on a log axis when its largest value exceeds its smallest by this factor.
_LOG_SPAN = 10.0
#: Bar width, and the fewest bar slots an axis shows (one client's bar stays narrow).
_BAR_WIDTH = 0.6
_MIN_BAR_SLOTS = 4


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)


def save_figure(fig: Figure, path: Path) -> Path:
    """Render ``fig`` to a PNG at ``path`` (parents created) without a display; returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(fig)
    fig.savefig(path, format="png", dpi=_DPI)
    return path


def lambda_trajectory(rounds: Sequence[Mapping[str, Any]], path: str | Path) -> Path:
    """Plot λ*_s of every objective over the rounds, and ‖d‖² below it (log scale).

    Parameters
    ----------
    rounds
        The ``rounds`` entries of ``results.json`` (``round``, ``lambda``, ``d_sq_norm``).
    path
        Where to write the PNG.

    Returns
    -------
    Path
        ``path``.
    """
    objectives = sorted({s for r in rounds for s in r.get("lambda", {})})
    fig = Figure(figsize=(PANEL_SIZE[0], 2 * PANEL_SIZE[1]), layout="constrained")
    ax_l, ax_d = fig.subplots(2, 1, sharex=True)
    for s in objectives:
        pts = [(r["round"], r["lambda"][s]) for r in rounds if _finite(r["lambda"].get(s))]
        if pts:
            xs, ys = zip(*pts, strict=True)
            ax_l.plot(xs, ys, marker="o", markersize=3, label=s)
    ax_l.set_ylabel("λ*")
    ax_l.set_ylim(-0.05, 1.05)
    ax_l.set_title("Stage 1 min-norm weights per objective")
    if objectives:
        ax_l.legend(loc="best", fontsize="small")
    pts = [(r["round"], r["d_sq_norm"]) for r in rounds if _finite(r.get("d_sq_norm"))]
    if pts:
        xs, ys = zip(*pts, strict=True)
        ax_d.plot(xs, ys, color="black", marker="o", markersize=3)
        # A log axis only helps when ‖d‖² spans orders of magnitude.
        if min(ys) > 0 and max(ys) / min(ys) > _LOG_SPAN:
            ax_d.set_yscale("log")
    ax_d.set_ylabel("‖d‖²")
    ax_d.set_xlabel("round")
    ax_d.xaxis.set_major_locator(MaxNLocator(integer=True))
    return save_figure(fig, Path(path))


def metrics_chart(objectives: Mapping[str, Mapping[str, Any]], path: str | Path) -> Path:
    """Bar chart of each objective's test metric per client, with the pooled value as a line.

    Parameters
    ----------
    objectives
        The ``objectives`` entry of ``results.json`` (``metric``, ``pooled``, ``clients``).
    path
        Where to write the PNG.

    Returns
    -------
    Path
        ``path``.
    """
    names = list(objectives)
    fig = Figure(figsize=(PANEL_SIZE[0], PANEL_SIZE[1] * max(len(names), 1)), layout="constrained")
    axes = fig.subplots(max(len(names), 1), 1, squeeze=False)[:, 0]
    for ax, name in zip(axes, names, strict=False):
        rep = objectives[name]
        clients = [c for c in rep.get("clients", []) if _finite(c.get("value"))]
        labels = [f"client {c['client']}" for c in clients]
        bars = ax.bar(
            range(len(clients)), [c["value"] for c in clients], _BAR_WIDTH, color="tab:blue"
        )
        ax.bar_label(bars, fmt="%.3f", fontsize="small")
        ax.set_xticks(range(len(clients)), labels, fontsize="small")
        ax.set_xlim(-0.5, max(len(clients), _MIN_BAR_SLOTS) - 0.5)
        if rep.get("metric") == "auroc":
            ax.set_ylim(0.0, 1.05)
        if _finite(rep.get("pooled")):
            ax.axhline(rep["pooled"], color="tab:red", linestyle="--", label="pooled")
            ax.legend(loc="best", fontsize="small")
        ax.set_ylabel(str(rep.get("metric", "")))
        ax.set_title(name)
        if not clients:
            ax.text(0.5, 0.5, "no defined values", ha="center", va="center", transform=ax.transAxes)
    return save_figure(fig, Path(path))
