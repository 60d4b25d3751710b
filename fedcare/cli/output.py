"""Human-readable output of the CLI: progress bars, the results table, atomic JSON writes."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from fedcare_core.evaluation.clinical_rows import (
    CLINICAL_HEAD,
    clinical_rows,
    length_of_stay_lines,
    subgroup_gap_lines,
)
from fedcare_core.evaluation.preference_rows import preference_lines

if TYPE_CHECKING:
    from fedcare_core.config import ExperimentConfig

#: Each phase's progress bar label (:attr:`~fedcare_core.algorithms.base.Algorithm.personal_phase`
#: names the per-client ones); a phase not listed is labelled by its name.
_STAGE_LABELS = {
    "stage1": "Stage 1 (federated rounds)",
    "stage2": "Stage 2 (personalisation)",
    "local": "Local models (each client alone)",
    "own-trees": "Own trees (each client alone)",
}
#: What one step of a phase is (every phase but the rounds goes client by client).
_STAGE_UNITS = {"stage1": "round"}


class ProgressBars:
    """One tqdm bar per stage, created on first report, written to stderr."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.bars: dict[str, tqdm] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        """Advance ``stage``'s bar to ``done`` of ``total``."""
        if not self.enabled:
            return
        bar = self.bars.get(stage)
        if bar is None:
            bar = tqdm(
                total=total,
                desc=_STAGE_LABELS.get(stage, stage),
                unit=_STAGE_UNITS.get(stage, "client"),
                file=sys.stderr,
                leave=True,
                dynamic_ncols=True,
            )
            self.bars[stage] = bar
        bar.update(done - bar.n)
        if done >= total:
            bar.close()

    def close(self) -> None:
        """Close every open bar."""
        for bar in self.bars.values():
            bar.close()


def _fmt(value: float | None, metric: str) -> str:
    if value is None:
        return "n/a"
    return f"{value:.4f}" if metric == "auroc" else f"{value:.3f} d"


def plural(count: int, word: str) -> str:
    """``"1 client"``, ``"3 clients"``: a count and its noun, in the plural unless one.

    Parameters
    ----------
    count
        How many.
    word
        The noun in the singular (a regular English plural: ``word + "s"``).
    """
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def spread(rep: dict[str, Any]) -> str:
    """`` ± <std>`` of an objective's mean over clients, or ``""`` when it says nothing.

    The standard deviation over clients is shown only when at least two clients have a value
    (over one client it is 0 by definition); a spread below the printed precision reads
    ``± <0.001`` rather than ``± 0.000``.
    """
    std = rep.get("std_over_clients")
    scored = [c for c in rep.get("clients", []) if c.get("value") is not None]
    if std is None or len(scored) < 2 or not math.isfinite(std):
        return ""
    return " ± <0.001" if round(std, 3) == 0 else f" ± {std:.3f}"


def results_table(results: dict[str, Any]) -> str:
    """A plain-text table of per-objective results."""
    rows = [("objective", "metric", "pooled", "mean over clients", "clients", "note")]
    for name, rep in results["objectives"].items():
        metric = rep["metric"]
        mean = rep["mean_over_clients"]
        mean_s = _fmt(mean, metric)
        if mean is not None:
            mean_s += spread(rep)
        rows.append(
            (
                name,
                "AUROC" if metric == "auroc" else "MAE (days)",
                _fmt(rep["pooled"], metric),
                mean_s,
                str(len(rep["clients"])),
                rep.get("reason") or "",
            )
        )
    lines = _aligned(rows)
    clinical = clinical_rows(results["objectives"])
    if clinical:
        lines += ["", "clinical metrics (pooled test; rates at each client's threshold):"]
        lines += _aligned([CLINICAL_HEAD, *clinical])
    lines += length_of_stay_lines(results["objectives"])
    gaps = subgroup_gap_lines(results["objectives"])
    if gaps:
        head = (
            "largest subgroup gaps (pooled test; subgroups of at least 30 rows, "
            "of each class for AUROC):"
        )
        lines += ["", head, *gaps]
    preferences = preference_lines(results["objectives"])
    if preferences:
        lines += ["", "clinical preferences (pooled test):", *preferences]
    timing = results.get("timing", {})
    head = (
        f"{results['algorithm']} on {results['dataset']}: "
        f"{plural(len(results['clients']), 'client')}, {plural(len(results['rounds']), 'round')}, "
        f"{timing.get('total_s', float('nan')):.1f} s"
    )
    privacy = results.get("privacy")
    if privacy:
        head += "\n" + privacy_line(privacy)
    return head + "\n" + "\n".join(lines)


def privacy_line(privacy: dict[str, Any]) -> str:
    """One line on the ε a run spent (a result's ``privacy`` section), both accountants'."""
    others = ", ".join(
        f"{name} {value:.3f}"
        for name, value in privacy.get("epsilon_by_accountant", {}).items()
        if name != privacy.get("dp_accountant")
    )
    return (
        f"client-level DP: ε = {privacy['epsilon']:.3f} at δ = {privacy['delta']:g} after "
        f"{plural(int(privacy['rounds_accounted']), 'round')} (noise multiplier "
        f"{privacy['noise_multiplier']:.4g}, clip {privacy['clip']:g}; {privacy['accountant']}"
        + (f"; by {others}" if others else "")
        + ")"
    )


def _aligned(rows: Sequence[tuple[str, ...]]) -> list[str]:
    """Rows as left-aligned columns, a rule under the first."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


#: Where ``fedcare run`` writes its results document when ``--out`` is not given.
RESULTS_DIR = Path("results")


def default_results_file(config: ExperimentConfig) -> Path:
    """``results/<dataset>-<algorithm>-K<k>-T<t>[-<variant>]-seed<seed>.json`` of a run.

    Git ignores ``results/``. The variant is the MLflow run's setting's
    (:func:`fedcare.tracking.naming.config_setting_name`: ``rho0.5``, ``n2000``, a DP budget),
    with each other departure from the defaults spelt out instead of the run name's opaque
    ``cfg<hash>`` (``stage2.epochs=1``; :func:`fedcare.tracking.naming.readable_variant`), so
    runs that differ in anything but the output options keep a file each, named readably.

    Parameters
    ----------
    config
        The run's configuration.

    Returns
    -------
    pathlib.Path
        Relative to the working folder.
    """
    from fedcare.tracking.naming import readable_variant
    from fedcare_core.data.registry import dataset_label

    variant = readable_variant(config.to_dict(), config.data.dataset)
    parts = [config.algorithm, f"K{config.data.clients}", f"T{config.stage1.rounds}"]
    name = "-".join(parts + ([variant] if variant else []))
    return RESULTS_DIR / f"{dataset_label(config.data.dataset)}-{name}-seed{config.seed}.json"
