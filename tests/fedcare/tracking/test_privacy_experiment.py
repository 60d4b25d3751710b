"""The privacy experiment's tables and figures, from documents of a small grid."""

from __future__ import annotations

import json
from pathlib import Path

from fedcare.experiments.cells import privacy_sweep
from fedcare.experiments.report import experiment_tables
from fedcare.tracking.experiment_plots import experiment_figures


def _document(auroc: float, mae: float, epsilon: float | None) -> dict:
    doc = {
        "objectives": {
            "readmission": {"metric": "auroc", "pooled": auroc, "mean_over_clients": auroc},
            "los": {"metric": "mae_days", "pooled": mae, "mean_over_clients": mae},
        },
        "stage1": {"rounds_run": 5},
        "timing": {"total_s": 1.0},
    }
    if epsilon is not None:
        doc["privacy"] = {"epsilon": epsilon}
    return doc


def test_privacy_tables_and_figures_show_each_budget_and_k(tmp_path: Path) -> None:
    cells = privacy_sweep(3, budgets=(3.0, None), counts=(3, 5), algorithms=("fedcare", "fedavg"))
    for cell in cells:
        private = cell.variant != "paper"
        gap = 0.1 if cell.algorithm == "fedcare" else 0.0
        auroc = 0.6 + gap - 0.05 * private + 0.01 * cell.seed
        doc = _document(auroc, 2.0 - gap, 2.9 if private else None)
        (tmp_path / f"{cell.key}.json").write_text(json.dumps(doc))
    files, runs, summary = experiment_tables("privacy", cells, tmp_path, dataset="diabetes130")
    report = files["privacy.md"]
    assert "## K = 3" in report and "## K = 5" in report
    assert "| dp-eps3 | fedcare |" in report and "ε spent" in report
    assert "### K = 5, dp-eps3: FedCARE minus each method" in report
    # Paired by seed: FedCARE is 0.1 ahead of FedAvg on every seed, at every budget and K.
    assert report.count("| fedavg | 0.1000 ± 0.0000 (3/3, p 0.250;") == 4  # 2 / 2**3
    assert set(runs["epsilon"].dropna()) == {2.9}
    paths = experiment_figures("privacy", summary, tmp_path / "figs", dataset="diabetes130")
    assert [p.name for p in paths] == [
        "privacy_avg_auroc_by_epsilon.png",
        "privacy_los_mae_by_epsilon.png",
    ]
    assert all(p.stat().st_size > 10_000 for p in paths)
