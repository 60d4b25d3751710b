"""The clinical metrics of a results document as table rows, for the CLI and the artifacts.

One row per binary objective (pooled over every client's test rows; rates at each client's own
operating point) and one line per length-of-stay objective (bias, MAE by length band, and its
prediction intervals' test coverage and width).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: The binary objectives' columns.
CLINICAL_HEAD = (
    "objective",
    "AUROC [95% CI]",
    "AUPRC",
    "Brier (base rate)",
    "calibration slope",
    "ECE",
    "mean risk / observed",
    "sensitivity",
    "specificity",
    "PPV",
    "NPV",
)


def shown(value: Any, digits: int = 3) -> str:
    """A metric as text: ``digits`` decimals, or ``n/a`` when undefined."""
    return "n/a" if value is None else f"{float(value):.{digits}f}"


def clinical_rows(objectives: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, ...]]:
    """One row of :data:`CLINICAL_HEAD` per binary objective with clinical metrics.

    Parameters
    ----------
    objectives
        ``results.json``'s ``objectives``.

    Returns
    -------
    list of tuple of str
        The formatted cells (``n/a`` where a metric is undefined).
    """
    rows = []
    for name, rep in objectives.items():
        c = rep.get("clinical") or {}
        if rep.get("metric") != "auroc" or not c:
            continue
        rows.append(
            (
                name,
                f"{shown(rep.get('pooled'))} {_interval(rep, 'auroc')}".strip(),
                shown(c.get("auprc")),
                f"{shown(c.get('brier'))} ({shown(c.get('brier_reference'))})",
                shown(c.get("calibration_slope"), 2),
                shown(c.get("ece")),
                f"{shown(c.get('mean_risk'))} / {shown(c.get('observed_rate'))}",
                *(shown(c.get(k)) for k in ("sensitivity", "specificity", "ppv", "npv")),
            )
        )
    return rows


def _interval(rep: Mapping[str, Any], metric: str, digits: int = 3) -> str:
    """``[0.581, 0.606]``: the metric's bootstrap interval, or "" without one."""
    interval = (rep.get("intervals") or {}).get(metric) or {}
    low, high = interval.get("low"), interval.get("high")
    return "" if low is None or high is None else f"[{low:.{digits}f}, {high:.{digits}f}]"


def subgroup_gap_lines(objectives: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Per objective and sensitive attribute, its main metric's largest subgroup gap.

    ``readmission AUROC by age: gap 0.031 (50-70 0.640, 812 rows; >=70 0.609, 1203 rows)``; an
    attribute with fewer than two eligible subgroups says so.
    """
    lines = []
    for name, rep in objectives.items():
        metric = rep.get("metric")
        label = "AUROC" if metric == "auroc" else "MAE (days)"
        for attribute, by_metric in (rep.get("subgroups") or {}).items():
            report = by_metric.get(metric) or {}
            values = {g["group"]: g["value"] for g in report.get("groups", [])}
            sizes = {g["group"]: g.get("n") for g in report.get("groups", [])}
            gap, high, low = report.get("gap"), report.get("highest"), report.get("lowest")
            if gap is None or high is None or low is None:
                lines.append(f"{name} {label} by {attribute}: fewer than two subgroups to compare")
                continue
            lines.append(
                f"{name} {label} by {attribute}: gap {gap:.3f} ({high} {shown(values[high])}, "
                f"{sizes[high]} rows; {low} {shown(values[low])}, {sizes[low]} rows)"
            )
    return lines


def length_of_stay_lines(objectives: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Per LOS objective: ``los: MAE 2.19 d [2.15, 2.23]; bias -0.87 d; MAE by length …``.

    With prediction intervals, their test coverage and width follow:
    ``…; 90 % interval covers 0.912, mean width 6.31 d``.
    """
    lines = []
    for name, rep in objectives.items():
        c = rep.get("clinical") or {}
        if rep.get("metric") != "mae_days" or not c:
            continue
        bands = [
            f"{key.removeprefix('mae_days_')} d {shown(value, 2)}"
            for key, value in c.items()
            if key.startswith("mae_days_")
        ]
        bias = c.get("bias_days")
        text = (
            f"{name}: MAE {shown(rep.get('pooled'), 2)} d {_interval(rep, 'mae_days', 2)}".strip()
        )
        text += f"; bias {'n/a' if bias is None else f'{bias:+.2f} d'}"
        text += f"; MAE by length {', '.join(bands)}" if bands else ""
        lines.append(text + _interval_text(c))
    return lines


def _interval_text(clinical: Mapping[str, Any]) -> str:
    """``; 90 % interval covers 0.912, mean width 6.31 d``, or "" without intervals."""
    if "interval_coverage" not in clinical:
        return ""
    level = clinical.get("interval_level")
    label = "interval" if level is None else f"{100 * level:g} % interval"
    return (
        f"; {label} covers {shown(clinical.get('interval_coverage'))}, "
        f"mean width {shown(clinical.get('interval_width_days'), 2)} d"
    )
