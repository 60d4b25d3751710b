"""An experiment's tables: per-run and summary CSVs and a Markdown report, from its cells.

Pure: returns file name → text; the caller writes the files (and logs them to MLflow).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from fedcare.experiments.cells import POOLED_ALGORITHM, Cell
from fedcare.experiments.selection import choose_on_validation, validation_ranks
from fedcare.experiments.summary import (
    CLINICAL_COLUMNS,
    DECISION_COLUMNS,
    GAP_METRICS,
    aggregate,
    load_rows,
    markdown_table,
    mean_std,
    paired_differences,
    pivot,
)
from fedcare_core.algorithms import proposed_algorithm
from fedcare_core.config.preferences import parse_preferences
from fedcare_core.config.variants import (
    ALL_LABELS,
    PREFERENCES,
    RECOMMENDED_BY_FEATURES,
    preference_names,
)
from fedcare_core.privacy.accountants import ACCOUNTANTS

_LABELS = {"auroc": "AUROC", "mae_days": "MAE (days)"}


def _objectives(frame: pd.DataFrame) -> list[tuple[str, str]]:
    """(objective, metric) pairs: binary objectives first, then regression ones."""
    metrics: dict[str, str] = frame.attrs.get("metrics", {})
    return sorted(metrics.items(), key=lambda item: (item[1] != "auroc", item[0]))


def _metric_spec(frame: pd.DataFrame, suffix: str = "") -> list[tuple[str, str, int]]:
    spec: list[tuple[str, str, int]] = []
    pairs = _objectives(frame)
    for name, metric in pairs:
        if metric != "auroc" and not suffix and spec:
            spec.append(("avg_auroc", "avg AUROC", 4))
        spec.append((name + suffix, f"{name} {_LABELS.get(metric, metric)}", _digits(metric)))
    if not suffix and all(m == "auroc" for _, m in pairs):
        spec.append(("avg_auroc", "avg AUROC", 4))
    return spec


def _digits(metric: str) -> int:
    return 4 if metric == "auroc" else 3


def _grids(
    summary: pd.DataFrame, runs: pd.DataFrame, rows: str, columns: str, label: str
) -> list[str]:
    """Average AUROC, then each objective, as ``rows`` × ``columns`` grids of mean ± std."""
    out = [
        f"## Average AUROC (pooled) by {label}\n\n",
        pivot(summary, rows, columns, "avg_auroc", 4),
    ]
    for name, metric in _objectives(runs):
        out += [
            f"\n## {name} ({metric}) by {label}\n\n",
            pivot(summary, rows, columns, name, _digits(metric)),
        ]
    return out


def _p_value(p: float) -> str:
    return "p n/a" if math.isnan(p) else f"p {p:.3f}"


def _paired(
    runs: pd.DataFrame, reference: str | None = None, label: str = "FedCARE", *, note: bool = True
) -> str:
    """Reference − method per seed: mean ± std, and the seeds where the reference is ahead.

    The reference is the proposed method (:func:`~fedcare_core.algorithms.proposed_algorithm`)
    unless named; ``note=False`` leaves out the note on what the brackets say.
    """
    reference = proposed_algorithm() if reference is None else reference
    pairs = _objectives(runs)
    metrics = [name for name, _ in pairs] + ["avg_auroc"]
    lower_better = {name for name, metric in pairs if metric != "auroc"}
    diff = paired_differences(runs, reference, metrics)
    table = _paired_table(diff, metrics, lower_better)
    return table + "\n" + _paired_note(label) if note else table


def _pairs_fedcare(runs: pd.DataFrame) -> bool:
    """Whether the runs hold FedCARE and another method to pair it with."""
    return proposed_algorithm() in set(runs["algorithm"]) and runs["algorithm"].nunique() > 1


def _paired_note(label: str) -> str:
    return (
        f"\nΔ = {label} − method on the same seed (same clients, splits and objectives); in "
        f"brackets, the seeds on which {label} is ahead (higher AUROC, lower MAE) out of those "
        f"where both have a value, {_TESTS_NOTE}"
    )


def _paired_by(runs: pd.DataFrame, column: str, name: str) -> list[str]:
    """Per value of a swept setting (K, ρ): FedCARE − each method, paired by seed."""
    if not _pairs_fedcare(runs):
        return []
    out: list[str] = []
    for value in sorted(set(runs[column])):
        group = runs[runs[column] == value]
        heading = f"\n## {name} = {value}: FedCARE minus each method, paired by seed\n\n"
        out += [heading, _paired(group, note=False)]
    return [*out, _paired_note("FedCARE")]


def _variants_paired(runs: pd.DataFrame, reference: str = "paper") -> list[str]:
    """Per method: the ``reference`` variant (the SPEC's default) − each other, paired by seed."""
    if reference not in set(runs["variant"]) or runs["variant"].nunique() < 2:
        return []
    out: list[str] = []
    for algorithm in dict.fromkeys(runs["algorithm"]):
        of_method = runs[runs["algorithm"] == algorithm]
        as_methods = of_method.assign(algorithm=of_method["variant"], variant=reference)
        heading = f"\n## {algorithm}: the `{reference}` variant minus each other, paired by seed"
        out += [heading + "\n\n", _paired(as_methods, reference, note=False)]
    return [*out, _paired_note(f"the `{reference}` variant")]


#: What the paired tables' p and p_c are, and the caution their many cells need.
_TESTS_NOTE = (
    "and p, the two-sided Wilcoxon signed-rank test of a zero "
    "median difference over those seeds (exact; with 10 seeds the smallest p is 0.002). "
    "After the semicolon, the Nadeau–Bengio corrected paired t-test (p_c) and its 95 % "
    "interval of the mean difference: the seeds re-split the same patients, so their "
    "differences are correlated and the Wilcoxon test overstates significance; the "
    "correction widens the variance by n_test / n_train. No correction for the many "
    "comparisons in a table is made: at the 0.05 level about one in twenty cells with no "
    "real difference still shows p < 0.05, so read single cells with care.\n"
)


def _paired_table(
    diff: pd.DataFrame,
    metrics: Sequence[str],
    lower_better: set[str],
    heads: Sequence[str] | None = None,
) -> str:
    """:func:`~.summary.paired_differences` as a Markdown table: mean ± std (ahead/n, p; p_c).

    ``lower_better``: the metrics on which a negative difference puts the reference ahead.
    """
    heads = ["method", *(heads or [f"Δ {m}" for m in metrics]), "seeds"]
    lines = [
        "| " + " | ".join(heads) + " |",
        "| --- | " + " | ".join("---:" for _ in metrics) + " | ---: |",
    ]
    for _, row in diff.iterrows():
        cells = [str(row["algorithm"])]
        n = int(row["n"])
        for m in metrics:
            ahead = int(row[f"{m}.negative" if m in lower_better else f"{m}.positive"])
            text = mean_std(row[f"{m}.mean"], row[f"{m}.std"], 3 if m in lower_better else 4)
            corrected = _corrected(row, m, 3 if m in lower_better else 4)
            cells.append(
                f"{text} ({ahead}/{int(row[f'{m}.n'])}, {_p_value(row[f'{m}.p'])}; {corrected})"
            )
        cells.append(str(n))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _corrected(row: pd.Series, metric: str, digits: int) -> str:
    """``p_c 0.210 [-0.002, 0.009]``: the corrected test of a paired difference."""
    p, low, high = (row.get(f"{metric}.nb.{k}", math.nan) for k in ("p", "low", "high"))
    if not math.isfinite(p):
        return "p_c n/a"
    return f"p_c {p:.3f} [{low:.{digits}f}, {high:.{digits}f}]"


def _clinical_spec(frame: pd.DataFrame) -> list[tuple[str, str, int]]:
    """The pooled clinical metrics' columns (:data:`~.summary.CLINICAL_COLUMNS`) present."""
    labels = {
        "auprc": ("AUPRC", 3), "brier": ("Brier", 4), "brier_reference": ("base-rate Brier", 4),
        "calibration_slope": ("calibration slope", 2), "ece": ("ECE", 3),
        "sensitivity": ("sensitivity", 3), "specificity": ("specificity", 3),
        "bias_days": ("bias (days)", 3), "interval_coverage": ("interval coverage", 3),
        "interval_width_days": ("interval width (days)", 2),
    }  # fmt: skip
    return [
        (f"{name}.{m}", f"{name} {labels[m][0]}", labels[m][1])
        for name, metric in _objectives(frame)
        for m in CLINICAL_COLUMNS.get(metric, ())
        if f"{name}.{m}" in frame.columns and frame[f"{name}.{m}"].notna().any()
    ]


#: The heading of an experiment's clinical metrics table (beside its AUROC and MAE tables).
_CLINICAL_HEADING = "\n## Clinical metrics (pooled)\n\n"


def _clinical(
    summary: pd.DataFrame, runs: pd.DataFrame, heading: str, keys: Sequence[str] = ("algorithm",)
) -> list[str]:
    """A table of the pooled clinical metrics (rows named by ``keys``), if the runs have any."""
    spec = _clinical_spec(runs)
    if not spec:
        return []
    note = (
        "Pooled over every client's test rows; sensitivity and specificity at each client's "
        "own threshold (its target sensitivity on its validation rows). A useful risk model "
        "has a Brier score below its base-rate reference and a calibration slope near 1.\n\n"
    )
    return [heading, note, markdown_table(summary, list(keys), spec)]


def _privacy(summary: pd.DataFrame, runs: pd.DataFrame) -> list[str]:
    """Per K: each metric by ε and method, then FedCARE − each method paired by seed."""
    out: list[str] = []
    spec = _metric_spec(runs)
    if "noise_multiplier" in runs.columns:
        spec.append(("noise_multiplier", "z", 2))
    if "epsilon" in runs.columns:
        spec.append(("epsilon", "ε spent", 3))
    spec += [  # the same noise under each accountant: the run's ε is its accountant's
        (f"epsilon.{name}", f"ε by {name.upper()}", 3)
        for name in ACCOUNTANTS
        if f"epsilon.{name}" in runs.columns
    ]
    paired = False
    for k in sorted(set(runs["clients"])):
        at_k = summary[summary["clients"] == k]
        out.append(f"## K = {k}\n\n")
        out.append(markdown_table(at_k, ["variant", "algorithm"], spec))
        at_k_runs = runs[runs["clients"] == k]
        heading = f"\n### K = {k}: clinical metrics\n\n"
        out += _clinical(at_k, at_k_runs, heading, ("variant", "algorithm"))
        for variant in dict.fromkeys(runs["variant"]):
            group = runs[(runs["clients"] == k) & (runs["variant"] == variant)]
            if _pairs_fedcare(group):
                heading = f"\n### K = {k}, {variant}: FedCARE minus each method\n\n"
                out += [heading, _paired(group, note=False)]
                paired = True
        out.append("\n")
    return [*out, _paired_note("FedCARE")] if paired else out


#: The ``recommended`` experiment's name of each (variant, algorithm) it runs.
_RECOMMENDED = "recommended"


def _method(variant: str, algorithm: str) -> str:
    proposed = algorithm == proposed_algorithm()
    if variant in RECOMMENDED_BY_FEATURES.values() and proposed:
        return _RECOMMENDED
    if variant == ALL_LABELS:
        return f"{algorithm} ({ALL_LABELS})"
    return f"{algorithm} (paper)" if proposed else algorithm


def _recommended(runs: pd.DataFrame) -> list[str]:
    """Per setting and K: every method's metrics, then the preset minus each, paired by seed."""
    methods = [_method(v, a) for v, a in zip(runs["variant"], runs["algorithm"], strict=True)]
    named = runs.assign(algorithm=methods, variant="")
    named.attrs = runs.attrs
    out: list[str] = []
    for setting in dict.fromkeys(named["setting"]):
        for k in sorted(set(named.loc[named["setting"] == setting, "clients"])):
            group = named[(named["setting"] == setting) & (named["clients"] == k)]
            group.attrs = runs.attrs
            summary = aggregate(group)
            out += [
                f"## {setting}, K = {k}: pooled test metrics\n\n",
                markdown_table(summary, ["algorithm"], _metric_spec(group)),
                *_clinical(summary, group, f"\n### {setting}, K = {k}: clinical metrics\n\n"),
                f"\n### {setting}, K = {k}: validation (pooled)\n\n",
                markdown_table(summary, ["algorithm"], _metric_spec(group, ".val")),
            ]
            if _RECOMMENDED in set(group["algorithm"]) and group["algorithm"].nunique() > 1:
                out += [
                    f"\n### {setting}, K = {k}: the recommended preset minus each method\n\n",
                    _paired(group, _RECOMMENDED, "the recommended preset"),
                ]
            out.append("\n")
    if ALL_LABELS in set(runs["variant"]):
        out.append(
            f"`{POOLED_ALGORITHM} ({ALL_LABELS})` gives every client every objective, its "
            "labels and private features, and pools them: the whole dataset in one place. Its "
            "pooled test "
            "rows are every client's test patients, a superset of the rows the others are "
            "scored on for an objective (the clients pursuing it); the patients and splits are "
            "the same.\n"
        )
    return out


def _preferences(runs: pd.DataFrame) -> list[str]:
    """Per setting and K: the plain preset and each preference, then each minus plain by seed."""
    plain = "plain"
    names = dict.fromkeys(RECOMMENDED_BY_FEATURES.values(), plain) | preference_names()
    named = runs.assign(algorithm=[names.get(v, v) for v in runs["variant"]], variant="")
    named.attrs = runs.attrs
    binary = [name for name, metric in _objectives(runs) if metric == "auroc"]
    attributes = {
        p.attribute for text in PREFERENCES.values() for p in parse_preferences(text).values()
    } - {""}
    gaps = [f"{b}.gap.{m}.{a}" for b in binary for a in sorted(attributes) for m in GAP_METRICS]
    extra = [f"{b}.{m}" for b in binary for m in DECISION_COLUMNS] + gaps
    extra = [c for c in extra if c in runs.columns]
    spec = [(c, _preference_head(c), 4) for c in extra]
    out: list[str] = []
    for (setting, k), group in named.groupby(["setting", "clients"], sort=False):
        group.attrs = runs.attrs
        summary = aggregate(group)
        out += [
            f"## {setting}, K = {k}: pooled test metrics\n\n",
            markdown_table(summary, ["algorithm"], _metric_spec(group)),
            f"\n### {setting}, K = {k}: what the preferences are about\n\n",
            "Rates at each client's decision threshold (the calibrated risk above which its "
            "loss flags a patient: 1/(1 + w) for a loss weighting a positive w times a "
            "negative; a sensitivity preference multiplies w by β) and the net benefit there, "
            "beside flagging every patient's (a model is worth using at a threshold only where "
            "its net benefit is above that); "
            "the largest subgroup gap (pooled test; subgroups of at least 30 rows of each class "
            "for AUROC, 30 positive rows for sensitivity, at the clients' target-sensitivity "
            "thresholds) per sensitive attribute.\n\n",
            markdown_table(summary, ["algorithm"], spec),
            *_clinical(summary, group, f"\n### {setting}, K = {k}: clinical metrics\n\n"),
        ]
        metrics = [name for name, _ in _objectives(runs)] + extra
        lower = {n for n, m in _objectives(runs) if m != "auroc"} | set(gaps)
        for preference in dict.fromkeys(group["algorithm"]):
            if preference == plain:
                continue
            pair = group[group["algorithm"].isin([plain, preference])]
            diff = paired_differences(pair, preference, metrics).assign(algorithm=preference)
            out += [
                f"\n### {setting}, K = {k}: {preference} minus plain, paired by seed\n\n",
                _paired_table(diff, metrics, lower),
            ]
        out.append(
            "\nΔ = the preference − the plain preset on the same seed; in brackets, the seeds "
            "on which the preference is ahead (higher AUROC, rates and net benefit; lower MAE "
            f"and gaps) out of those where both have a value, {_TESTS_NOTE}\n"
        )
    return out


def _preference_head(column: str) -> str:
    """``readmission.gap.auroc.race`` → ``readmission AUROC gap by race``."""
    name, _, rest = column.partition(".")
    if rest.startswith("gap."):
        metric, _, attribute = rest.removeprefix("gap.").partition(".")
        return f"{name} {_LABELS.get(metric, metric)} gap by {attribute}"
    return f"{name} {rest.replace('decision_', 'decision ').replace('_', ' ')}"


def _selection(summary: pd.DataFrame, runs: pd.DataFrame) -> list[str]:
    """Per federation setting: the validation tables and the variant the rule chooses."""
    settings = list(dict.fromkeys(runs["setting"]))
    if settings == ["iid"]:
        return _selection_setting(summary, runs, "")
    out: list[str] = []
    for setting in settings:
        at = runs[runs["setting"] == setting]
        at.attrs = runs.attrs
        out += [f"# Setting `{setting}`\n\n"]
        out += _selection_setting(summary[summary["setting"] == setting], at, f"{setting}: ")
    return out


def _selection_setting(summary: pd.DataFrame, runs: pd.DataFrame, prefix: str) -> list[str]:
    """Validation metrics only: each variant's, their ranks and the variant the rule chooses."""
    metrics = dict(_objectives(runs))
    spec = [(f"{name}.val", head, digits) for name, head, digits in _metric_spec(runs)]
    ranks = validation_ranks(summary, metrics)
    chosen = choose_on_validation(summary, metrics)
    lines = ["| variant | " + " | ".join(f"{n} rank" for n in metrics) + " | mean rank |"]
    lines.append("| --- | " + " | ".join("---:" for _ in metrics) + " | ---: |")
    for _, row in ranks.iterrows():
        cells = [f"{int(row[f'{n}.rank'])}" for n in metrics]
        lines.append(f"| {row['variant']} | " + " | ".join(cells) + f" | {row['mean_rank']:.2f} |")
    return [
        f"## {prefix}Validation metrics (pooled over each client's validation split)\n\n",
        "No test metric is shown or used here: the choice below reads validation only.\n\n",
        markdown_table(summary, ["variant"], spec),
        f"\n## {prefix}Ranks on validation\n\n",
        "\n".join(lines) + "\n",
        f"\n**{prefix}Chosen on validation: `{chosen}`** (lowest mean rank over the objectives; "
        "`fedcare/experiments/selection.py`).\n",
    ]


def _is_test_column(column: str, metrics: dict[str, str]) -> bool:
    """Whether a runs column holds a test metric (not ``<objective>.val``)."""
    base = column.removesuffix(".client_mean")
    objective, _, rest = column.partition(".")
    return base in metrics or base == "avg_auroc" or (objective in metrics and rest != "val")


def experiment_tables(
    experiment: str, cells: Sequence[Cell], cells_dir: str | Path, *, dataset: str
) -> tuple[dict[str, str], pd.DataFrame, pd.DataFrame]:
    """Build an experiment's tables from its cells' documents.

    Parameters
    ----------
    experiment
        ``comparison``, ``clients``, ``disparity``, ``ablation``, ``privacy`` or ``selection``.
    cells
        The experiment's grid (every document must exist in ``cells_dir``).
    cells_dir
        Where the engine wrote the documents.
    dataset
        For the report's title.

    Returns
    -------
    tuple
        File name → text (``<experiment>_runs.csv``, ``<experiment>_summary.csv``,
        ``<experiment>.md``), the per-run frame and the summary frame.
    """
    runs = load_rows(cells, cells_dir)
    if experiment == "selection":  # chosen on validation: the test metrics are left out
        metrics = runs.attrs["metrics"]
        runs = runs[[c for c in runs.columns if not _is_test_column(c, metrics)]]
        runs.attrs["metrics"] = metrics
    summary = aggregate(runs)
    seeds = sorted(set(runs["seed"]))
    shown = (
        "pooled validation metrics only."
        if experiment == "selection"
        else "pooled test metrics unless marked 'client mean' (mean over clients of each "
        "client's own test metric)."
    )
    title = (
        f"# {experiment} — {dataset}\n\n{len(runs)} runs; seeds {seeds[0]}–{seeds[-1]} "
        f"({len(seeds)}); mean ± std over seeds (ddof 1); {shown} A cell marked "
        "'k of n runs' averages the k runs that have a value; the others have none (no test "
        "label, or a diverged model whose error is infinite).\n\n"
    )
    body: list[str] = [title]
    if experiment == "comparison":
        body += [
            "## Pooled metrics\n\n",
            markdown_table(summary, ["algorithm"], _metric_spec(runs)),
            "\n## Mean over clients\n\n",
            markdown_table(summary, ["algorithm"], _metric_spec(runs, ".client_mean")),
            *_clinical(summary, runs, _CLINICAL_HEADING),
        ]
        if _pairs_fedcare(runs):
            body += ["\n## FedCARE minus each method, paired by seed\n\n", _paired(runs)]
    elif experiment == "clients":
        body += _grids(summary, runs, "algorithm", "clients", "K")
        body += _clinical(summary, runs, _CLINICAL_HEADING, ("clients", "algorithm"))
        body += _paired_by(runs, "clients", "K")
    elif experiment == "disparity":
        body += _grids(summary, runs, "rho", "algorithm", "ρ")
        body += _clinical(summary, runs, _CLINICAL_HEADING, ("rho", "algorithm"))
        body += _paired_by(runs, "rho", "ρ")
    elif experiment == "privacy":
        body += _privacy(summary, runs)
    elif experiment == "selection":
        body += _selection(summary, runs)
    elif experiment == "recommended":
        body += _recommended(runs)
    elif experiment == "preferences":
        body += _preferences(runs)
    else:
        body += [markdown_table(summary, ["variant", "algorithm"], _metric_spec(runs))]
        body += _clinical(summary, runs, _CLINICAL_HEADING, ("variant", "algorithm"))
        body += _variants_paired(runs)
    files = {
        f"{experiment}_runs.csv": runs.to_csv(index=False),
        f"{experiment}_summary.csv": summary.to_csv(index=False),
        f"{experiment}.md": "".join(body),
    }
    return files, runs, summary
