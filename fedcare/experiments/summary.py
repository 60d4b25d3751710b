"""Result documents → one row per run → mean ± std tables (CSV and Markdown).

``avg_auroc`` is the mean of a run's binary objectives' pooled AUROC, the paper's "average
AUROC" (Fig. 3, 5, 6); each objective's pooled value and its mean over clients are kept too.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import wilcoxon

from fedcare.experiments.cells import Cell

#: Columns identifying a setting (a table row before averaging over seeds).
SETTING = ["variant", "algorithm", "clients", "rho", "setting"]
#: The clinical metrics a run's row keeps per objective (``<objective>.<metric>``), by the
#: objective's main metric (``results.json``'s ``objectives.<name>.clinical``).
CLINICAL_COLUMNS = {
    "auroc": (
        "auprc", "brier", "brier_reference", "calibration_slope", "ece", "sensitivity",
        "specificity",
    ),
    "mae_days": ("bias_days", "interval_coverage", "interval_width_days"),
}  # fmt: skip
#: A binary objective's rates at the clients' decision thresholds (where each client's loss
#: flags a patient: what a sensitivity preference moves), per run.
DECISION_COLUMNS = (
    "decision_sensitivity",
    "decision_specificity",
    "net_benefit",
    "net_benefit_all",
)
#: The subgroup metrics whose largest gap per sensitive attribute is a per-run column
#: (``<objective>.gap.<metric>.<attribute>``: what a fairness preference narrows).
GAP_METRICS = ("auroc", "sensitivity")
#: Per-run columns that are not metrics: the rows each run trained and was tested on.
_SIZES = ("n_train", "n_test")


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) else math.nan


def _run_row(cell: Cell, document: dict[str, Any]) -> dict[str, Any]:
    """One run's metrics as a flat row.

    Parameters
    ----------
    cell
        The run's cell.
    document
        Its results document (``ExperimentResult.to_dict``).

    Returns
    -------
    dict
        Setting columns, ``seed``, per objective ``<name>`` (pooled), ``<name>.client_mean``
        and ``<name>.val`` (pooled on the validation splits) and its pooled clinical metrics
        (:data:`CLINICAL_COLUMNS`, ``<name>.brier``), ``avg_auroc`` (``.val`` too), under DP
        the ``epsilon`` spent, the rows trained and tested on over every client (``n_train``,
        ``n_test``), Stage 1's ``rounds_run`` and the run's ``seconds``.
    """
    row: dict[str, Any] = {
        "variant": cell.variant,
        "algorithm": cell.algorithm,
        "clients": cell.clients,
        "rho": math.nan if cell.rho is None else cell.rho,
        "setting": cell.setting,
        "seed": cell.seed,
    }
    aurocs, val_aurocs = [], []
    for name, entry in document["objectives"].items():
        row[name] = _number(entry.get("pooled"))
        clinical = entry.get("clinical") or {}
        for metric in CLINICAL_COLUMNS.get(str(entry.get("metric")), ()):
            row[f"{name}.{metric}"] = _number(clinical.get(metric))
        row |= _preference_columns(name, entry)
        row[f"{name}.client_mean"] = _number(entry.get("mean_over_clients"))
        row[f"{name}.val"] = _number((entry.get("validation") or {}).get("pooled"))
        if entry.get("metric") == "auroc" and math.isfinite(row[name]):
            aurocs.append(row[name])
        if entry.get("metric") == "auroc" and math.isfinite(row[f"{name}.val"]):
            val_aurocs.append(row[f"{name}.val"])
    row["avg_auroc"] = sum(aurocs) / len(aurocs) if aurocs else math.nan
    row["avg_auroc.val"] = sum(val_aurocs) / len(val_aurocs) if val_aurocs else math.nan
    privacy = document.get("privacy")
    if privacy:  # a run under DP: its noise, the ε its rounds spent, each accountant's ε
        row["noise_multiplier"] = _number(privacy.get("noise_multiplier"))
        row["epsilon"] = _number(privacy.get("epsilon"))
        for accountant, epsilon in (privacy.get("epsilon_by_accountant") or {}).items():
            row[f"epsilon.{accountant}"] = _number(epsilon)
    for size in _SIZES:
        row[size] = sum(int(c.get(size, 0)) for c in document.get("clients", []))
    row["rounds_run"] = document.get("stage1", {}).get("rounds_run", 0)
    row["seconds"] = _number(document.get("timing", {}).get("total_s"))
    return row


def _preference_columns(name: str, entry: dict[str, Any]) -> dict[str, float]:
    """A binary objective's decision-threshold rates and subgroup gaps (:data:`GAP_METRICS`)."""
    if entry.get("metric") != "auroc":
        return {}
    clinical = entry.get("clinical") or {}
    out = {f"{name}.{m}": _number(clinical.get(m)) for m in DECISION_COLUMNS if m in clinical}
    for attribute, by_metric in (entry.get("subgroups") or {}).items():
        for metric in GAP_METRICS:
            if metric in by_metric:
                gap = by_metric[metric].get("gap")
                out[f"{name}.gap.{metric}.{attribute}"] = _number(gap)
    return out


def load_rows(cells: Iterable[Cell], out_dir: str | Path) -> pd.DataFrame:
    """Read every cell's document from ``out_dir`` into a frame (one row per run).

    ``frame.attrs["metrics"]`` maps each objective to its metric (``auroc`` or ``mae``).
    """
    rows = []
    metrics: dict[str, str] = {}
    for cell in cells:
        doc = json.loads((Path(out_dir) / f"{cell.key}.json").read_text())
        rows.append(_run_row(cell, doc))
        metrics.update({name: entry["metric"] for name, entry in doc["objectives"].items()})
    frame = pd.DataFrame(rows)
    frame.attrs["metrics"] = metrics
    return frame


def _metric_columns(frame: pd.DataFrame) -> list[str]:
    """The metric columns of a runs frame, in a stable order."""
    fixed = set(SETTING) | {"seed", "rounds_run", "seconds", *_SIZES}
    return [c for c in frame.columns if c not in fixed]


def aggregate(frame: pd.DataFrame, by: Sequence[str] = SETTING) -> pd.DataFrame:
    """Mean, std (ddof 1) and count of every metric over seeds, per setting.

    A run without a value for a metric (no test label, or a diverged model whose error is
    infinite or ``null``) is left out of that metric's mean, and counted
    out of ``<metric>.count``, so a table can say so.

    Returns
    -------
    pandas.DataFrame
        One row per setting; columns ``<metric>.mean``, ``<metric>.std``, ``<metric>.count``
        (runs with a value) and ``n`` (runs).
    """
    metrics = _metric_columns(frame)
    finite = frame[metrics].replace([math.inf, -math.inf], math.nan)  # a diverged model's error
    keyed = frame.assign(rho=frame["rho"].fillna(-1.0), **{m: finite[m] for m in metrics})
    grouped = keyed.groupby(list(by), sort=False, dropna=False)
    out = grouped[metrics].agg(["mean", "std", "count"])
    out.columns = [f"{pair[0]}.{pair[1]}" for pair in out.columns]
    out = out.copy()  # one block: agg's column-by-column frame would warn on every insert
    out["n"] = grouped.size()
    out = out.reset_index()
    out["rho"] = out["rho"].where(out["rho"] >= 0)
    return out


def mean_std(mean: float, std: float, digits: int) -> str:
    """``0.781 ± 0.012`` (``n/a`` when undefined; no ± for a single run).

    A value too large for fixed digits (a diverged model's bias) is written ``2.85e+33``.
    """
    if not math.isfinite(mean):
        return "n/a"
    form = f".{digits}f" if max(abs(mean), abs(std) if math.isfinite(std) else 0) < 1e6 else ".3g"
    if not math.isfinite(std):
        return f"{mean:{form}}"
    return f"{mean:{form}} ± {std:{form}}"


def _summary_cell(row: Any, metric: str, digits: int) -> str:
    """:func:`mean_std` of an :func:`aggregate` row, saying how many runs lacked a value."""
    text = mean_std(row.get(f"{metric}.mean", math.nan), row.get(f"{metric}.std", math.nan), digits)
    count, runs = row.get(f"{metric}.count"), row.get("n")
    if count is not None and runs is not None and 0 < int(count) < int(runs):
        text += f" ({int(count)} of {int(runs)} runs)"
    return text


def markdown_table(
    agg: pd.DataFrame,
    index: Sequence[str],
    metrics: Sequence[tuple[str, str, int]],
) -> str:
    """A Markdown table of ``mean ± std`` cells.

    Parameters
    ----------
    agg
        :func:`aggregate`'s output.
    index
        Setting columns shown as the leading columns.
    metrics
        ``(metric, header, digits)`` per metric column.
    """
    heads = list(index) + [h for _, h, _ in metrics] + ["runs"]
    lines = [
        "| " + " | ".join(heads) + " |",
        "| " + " | ".join(["---"] * len(index) + ["---:"] * (len(metrics) + 1)) + " |",
    ]
    for _, row in agg.iterrows():
        cells = [_fmt_setting(row[c]) for c in index]
        cells += [_summary_cell(row, m, digits) for m, _, digits in metrics]
        cells.append(str(int(row["n"])))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _fmt_setting(value: Any) -> str:
    if isinstance(value, float):
        return "default" if math.isnan(value) else f"{value:g}"
    return str(value)


def pivot(agg: pd.DataFrame, rows: str, columns: str, metric: str, digits: int) -> str:
    """A Markdown grid of ``metric`` mean ± std with one row per ``rows`` value."""
    row_values = list(dict.fromkeys(agg[rows]))
    col_values = list(dict.fromkeys(agg[columns]))
    lines = [
        f"| {rows} | " + " | ".join(_fmt_setting(c) for c in col_values) + " |",
        "| --- | " + " | ".join("---:" for _ in col_values) + " |",
    ]
    for r in row_values:
        cells = []
        for c in col_values:
            hit = agg[(agg[rows] == r) & (agg[columns] == c)]
            if hit.empty:
                cells.append("")
            else:
                cells.append(_summary_cell(hit.iloc[0], metric, digits))
        lines.append(f"| {_fmt_setting(r)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def signed_rank_p(differences: np.ndarray) -> float:
    """Two-sided p-value of the Wilcoxon signed-rank test that the median difference is zero.

    Zero differences are left out (Wilcoxon's rule); the test is exact for small samples
    without ties, as :func:`scipy.stats.wilcoxon` chooses. An infinite difference (a diverged
    run) ranks above every finite one, with its sign. NaN when no difference is non-zero.
    """
    d = np.asarray(differences, dtype=float)
    if not np.any(d != 0):
        return float("nan")
    finite = np.isfinite(d)
    largest = float(np.abs(d[finite]).max()) if finite.any() else 0.0
    d = np.where(finite, d, np.sign(d) * (largest + 1.0))
    return float(wilcoxon(d, zero_method="wilcox", alternative="two-sided").pvalue)


def paired_differences(
    frame: pd.DataFrame, reference: str, metrics: Sequence[str], by: Sequence[str] = SETTING
) -> pd.DataFrame:
    """Per-seed differences ``reference − algorithm``, averaged over seeds.

    Runs of one seed share their clients, splits and objective draw, so the paired difference
    removes the seed-to-seed spread that both methods share; its std says whether a gap is
    larger than what the seeds alone move.

    Parameters
    ----------
    frame
        A runs frame (:func:`load_rows`).
    reference
        The algorithm the others are compared with (e.g. ``"fedcare"``).
    metrics
        Metric columns to compare.
    by
        Setting columns (the algorithm's column is among them).

    Returns
    -------
    pandas.DataFrame
        One row per other setting: ``<metric>.mean`` / ``<metric>.std`` of the difference,
        ``<metric>.positive`` / ``<metric>.negative`` (seeds with a positive / negative
        difference: the reference is ahead on the first for an AUROC, on the second for an
        error), ``<metric>.n`` (seeds where both have a value), ``<metric>.p`` (two-sided
        Wilcoxon signed-rank test of a zero median difference; NaN when every difference is
        zero), the Nadeau–Bengio corrected paired t-test (``<metric>.nb.p`` and its 95 %
        interval of the mean difference, ``<metric>.nb.low`` and ``.nb.high``; NaN without the
        runs' sizes or two differences) and ``n`` (seeds with any difference).
    """
    keys = [c for c in by if c != "algorithm"] + ["seed"]
    n_train, n_test = (float(frame[c].mean()) if c in frame else math.nan for c in _SIZES)
    keyed = frame.assign(rho=frame["rho"].fillna(-1.0))
    ref = keyed[keyed["algorithm"] == reference].set_index(keys)[list(metrics)]
    rows = []
    for algorithm, group in keyed[keyed["algorithm"] != reference].groupby("algorithm", sort=False):
        diff = ref - group.set_index(keys)[list(metrics)]
        diff = diff.dropna(how="all")
        row: dict[str, object] = {"algorithm": algorithm, "n": len(diff)}
        for m in metrics:
            values = diff[m].dropna()
            row[f"{m}.mean"] = float(values.mean())
            row[f"{m}.std"] = float(values.std())
            row[f"{m}.positive"] = int((values > 0).sum())
            row[f"{m}.negative"] = int((values < 0).sum())
            row[f"{m}.n"] = len(values)
            row[f"{m}.p"] = signed_rank_p(values.to_numpy())
            row |= _corrected_test(values.to_numpy(), (n_train, n_test), f"{m}.nb")
        rows.append(row)
    return pd.DataFrame(rows)


def _corrected_test(diffs: np.ndarray, sizes: tuple[float, float], prefix: str) -> dict[str, float]:
    """The Nadeau–Bengio test of per-seed differences: ``<prefix>.p``, ``.low``, ``.high``.

    Every seed re-splits the same patients, so the seeds' test sets overlap others' training
    sets and their differences are correlated; the correction widens the t-test's variance by
    ``n_test / n_train`` (:func:`~fedcare_core.evaluation.significance.nadeau_bengio_ttest`).
    """
    from fedcare_core.evaluation.significance import nadeau_bengio_ttest

    n_train, n_test = sizes
    finite = diffs[np.isfinite(diffs)]
    if len(finite) < 2 or not (n_train > 0 and n_test > 0):
        return {f"{prefix}.p": math.nan, f"{prefix}.low": math.nan, f"{prefix}.high": math.nan}
    test = nadeau_bengio_ttest(finite, round(n_train), round(n_test))
    return {f"{prefix}.p": test.p, f"{prefix}.low": test.low, f"{prefix}.high": test.high}
