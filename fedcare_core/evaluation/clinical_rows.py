"""The clinical metrics of a results document as table rows, for the CLI and the artifacts.

One row per binary objective (pooled over every client's test rows; rates at each client's own
operating point) and one line per length-of-stay objective (bias, and MAE by length band).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: The binary objectives' columns.
CLINICAL_HEAD = (
    "objective",
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


def _num(value: Any, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


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
                _num(c.get("auprc")),
                f"{_num(c.get('brier'))} ({_num(c.get('brier_reference'))})",
                _num(c.get("calibration_slope"), 2),
                _num(c.get("ece")),
                f"{_num(c.get('mean_risk'))} / {_num(c.get('observed_rate'))}",
                *(_num(c.get(k)) for k in ("sensitivity", "specificity", "ppv", "npv")),
            )
        )
    return rows


def length_of_stay_lines(objectives: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Per LOS objective: ``los: bias -0.87 d; MAE by length 0-3 d 1.84, 3-7 d 1.06, …``."""
    lines = []
    for name, rep in objectives.items():
        c = rep.get("clinical") or {}
        if rep.get("metric") != "mae_days" or not c:
            continue
        bands = [
            f"{key.removeprefix('mae_days_')} d {_num(value, 2)}"
            for key, value in c.items()
            if key.startswith("mae_days_")
        ]
        bias = c.get("bias_days")
        text = f"{name}: bias {'n/a' if bias is None else f'{bias:+.2f} d'}"
        lines.append(text + (f"; MAE by length {', '.join(bands)}" if bands else ""))
    return lines
