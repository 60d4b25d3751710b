"""Run documents → rows → mean ± std tables."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from fedcare.experiments.cells import Cell, experiment_cells
from fedcare.experiments.report import experiment_tables
from fedcare.experiments.summary import (
    aggregate,
    load_rows,
    mean_std,
    paired_differences,
    signed_rank_p,
)
from fedcare_core.config import DataConfig, ExperimentConfig
from fedcare_core.errors import ConfigError


def _doc(early: float, readm: float | None, los: float) -> dict:
    return {
        "objectives": {
            "early_discharge": {"metric": "auroc", "pooled": early, "mean_over_clients": early},
            "readmission": {
                "metric": "auroc",
                "pooled": readm,
                "mean_over_clients": readm,
                **({} if readm is not None else {"reason": "one class"}),
            },
            "los": {"metric": "mae_days", "pooled": los, "mean_over_clients": los + 0.1},
        },
        "stage1": {"rounds_run": 3},
        "timing": {"total_s": 1.5},
    }


@pytest.fixture
def grid(tmp_path: Path) -> tuple[list[Cell], Path]:
    values = {
        Cell("fedcare", 0, 3): _doc(0.70, 0.60, 2.0),
        Cell("fedcare", 1, 3): _doc(0.80, 0.62, 1.0),
        Cell("fedavg", 0, 3): _doc(0.60, None, 3.0),
        Cell("fedavg", 1, 3): _doc(0.64, 0.50, 3.0),
    }
    for cell, doc in values.items():
        (tmp_path / f"{cell.key}.json").write_text(json.dumps(doc))
    return list(values), tmp_path


def test_rows_mean_and_std_over_seeds(grid):
    cells, folder = grid
    runs = load_rows(cells, folder)
    assert runs.attrs["metrics"] == {
        "early_discharge": "auroc",
        "readmission": "auroc",
        "los": "mae_days",
    }
    first = runs.iloc[0]
    assert first["avg_auroc"] == pytest.approx(0.65)
    # An undefined AUROC is left out of the run's average, not counted as zero.
    assert runs.iloc[2]["avg_auroc"] == pytest.approx(0.60)
    agg = aggregate(runs).set_index("algorithm")
    assert agg.loc["fedcare", "early_discharge.mean"] == pytest.approx(0.75)
    assert agg.loc["fedcare", "early_discharge.std"] == pytest.approx(math.sqrt(0.005))
    assert agg.loc["fedcare", "los.client_mean.mean"] == pytest.approx(1.6)
    assert agg.loc["fedavg", "readmission.mean"] == pytest.approx(0.50)
    assert int(agg.loc["fedavg", "n"]) == 2
    assert math.isnan(agg.loc["fedcare", "rho"])


def test_comparison_report_has_both_tables(grid):
    cells, folder = grid
    files, _, summary = experiment_tables("comparison", cells, folder, dataset="toy")
    md = files["comparison.md"]
    assert (
        "| fedcare | 0.7500 ± 0.0707 | 0.6100 ± 0.0141 | 0.6800 ± 0.0424 | 1.500 ± 0.707 | 2 |"
        in md
    )
    assert "## Mean over clients" in md
    assert files["comparison_summary.csv"].count("\n") == 1 + len(summary)


def test_mean_std_formatting():
    assert mean_std(0.5, float("nan"), 3) == "0.500"
    assert mean_std(float("nan"), 0.1, 3) == "n/a"
    assert mean_std(2.85e33, 8.04e33, 3) == "2.85e+33 ± 8.04e+33"  # a diverged model's bias
    assert mean_std(1.23456, 0.01, 2) == "1.23 ± 0.01"


def test_paired_differences_match_seeds(grid):
    cells, folder = grid
    runs = load_rows(cells, folder)
    diff = paired_differences(runs, "fedcare", ["early_discharge", "readmission", "los"])
    row = diff.set_index("algorithm").loc["fedavg"]
    assert row["early_discharge.mean"] == pytest.approx(0.13)
    assert row["early_discharge.positive"] == 2
    assert row["readmission.mean"] == pytest.approx(0.12)  # seed 0 has no readmission AUROC
    assert row["los.mean"] == pytest.approx(-1.5)  # FedCARE's lower error: a negative Δ
    assert int(row["n"]) == 2
    assert row["readmission.n"] == 1 and row["readmission.positive"] == 1
    assert row["los.negative"] == 2 and row["los.positive"] == 0


def test_a_seed_without_a_value_or_with_a_tie_is_not_counted_ahead(grid):
    cells, folder = grid
    tied = json.loads((folder / f"{cells[2].key}.json").read_text())
    tied["objectives"]["los"]["pooled"] = 2.0  # FedAvg's seed-0 LOS equals FedCARE's
    (folder / f"{cells[2].key}.json").write_text(json.dumps(tied))
    row = paired_differences(load_rows(cells, folder), "fedcare", ["readmission", "los"]).iloc[0]
    assert (row["los.negative"], row["los.positive"], row["los.n"]) == (1, 0, 2)
    # Seed 0's readmission has no FedAvg value: one seed compared, not two.
    assert (row["readmission.positive"], row["readmission.n"]) == (1, 1)


def test_signed_rank_p_is_the_exact_two_sided_wilcoxon_value():
    ten_ahead = np.linspace(0.01, 0.1, 10)
    assert signed_rank_p(ten_ahead) == pytest.approx(2 / 2**10)  # every sign the same
    assert signed_rank_p(-ten_ahead) == pytest.approx(2 / 2**10)
    mixed = np.array([0.5, -0.1, 0.2, 0.3, -0.4, 0.6])
    # W- = 1 + 4 = 5; 10 of the 64 sign patterns give W <= 5: p = 2 * 10 / 64.
    assert signed_rank_p(mixed) == pytest.approx(0.3125)
    assert math.isnan(signed_rank_p(np.zeros(4)))
    # A diverged run (an infinite difference) ranks as the largest difference, with its sign.
    diverged = np.array([0.5, -np.inf, 0.2, 0.3, -0.1, 0.6])
    assert signed_rank_p(diverged) == pytest.approx(
        signed_rank_p(np.array([0.5, -0.7, 0.2, 0.3, -0.1, 0.6]))
    )


def test_a_table_says_how_many_runs_had_no_value(grid):
    cells, folder = grid
    diverged = json.loads((folder / f"{cells[3].key}.json").read_text())
    diverged["objectives"]["los"]["pooled"] = float("inf")  # a diverged model's MAE
    (folder / f"{cells[3].key}.json").write_text(json.dumps(diverged))
    files, _, summary = experiment_tables("comparison", cells, folder, dataset="toy")
    fedavg = summary.set_index("algorithm").loc["fedavg"]
    assert int(fedavg["los.count"]) == 1 and int(fedavg["n"]) == 2
    pooled = files["comparison.md"].split("## Mean over clients")[0].splitlines()
    rows = {line.split(" | ")[0]: line for line in pooled if line.startswith("| fed")}
    assert "3.000 (1 of 2 runs)" in rows["| fedavg"]
    assert "(1 of 2 runs)" in rows["| fedavg"].split(" | ")[2]  # readmission: seed 0 has none
    assert "of 2 runs" not in rows["| fedcare"]


def _val_doc(test: tuple[float, float, float], val: tuple[float, float, float]) -> dict:
    doc = _doc(*test)
    for name, value in zip(("early_discharge", "readmission", "los"), val, strict=True):
        doc["objectives"][name]["validation"] = {"pooled": value, "mean_over_clients": value}
    return doc


def test_selection_reads_validation_only_and_chooses_by_mean_rank(tmp_path):
    # "good-test" is best on every test metric and worst on validation: it must not be chosen.
    docs = {
        "paper": ((0.70, 0.60, 2.0), (0.70, 0.60, 2.0)),  # validation ranks 3, 2, 2
        "s2-warm": ((0.71, 0.61, 1.9), (0.75, 0.59, 1.8)),  # 1, 3, 1
        "s2-frozen": ((0.90, 0.90, 1.0), (0.60, 0.55, 2.5)),  # 4, 4, 4
        "s2-frozen-warm": ((0.70, 0.60, 2.0), (0.72, 0.62, 2.1)),  # 2, 1, 3
    }
    cells = []
    for variant, (test, val) in docs.items():
        for seed in (0, 1):
            cell = Cell("fedcare", seed, 30, None, variant)
            (tmp_path / f"{cell.key}.json").write_text(json.dumps(_val_doc(test, val)))
            cells.append(cell)
    files, runs, summary = experiment_tables("selection", cells, tmp_path, dataset="toy")
    md = files["selection.md"]
    assert "**Chosen on validation: `s2-warm`**" in md  # mean ranks 2.33, 1.67, 4, 2
    assert "| s2-frozen | 4 | 4 | 4 | 4.00 |" in md and "| paper | 3 | 2 | 2 | 2.33 |" in md
    assert not {"early_discharge", "avg_auroc", "los.client_mean"} & set(runs.columns)
    assert "0.9000" not in md and "0.90" not in files["selection_summary.csv"]
    assert summary.set_index("variant").loc["paper", "avg_auroc.val.mean"] == pytest.approx(0.65)


def test_a_selection_over_two_settings_chooses_in_each_on_its_own_validation(tmp_path):
    # In iid "s2-warm" ranks first on validation, in small "paper" does.
    docs = {
        ("iid", "paper"): (0.70, 0.60, 2.0),
        ("iid", "s2-warm"): (0.75, 0.62, 1.8),
        ("small", "paper"): (0.66, 0.58, 2.1),
        ("small", "s2-warm"): (0.60, 0.55, 2.4),
    }
    cells = []
    for (setting, variant), val in docs.items():
        for seed in (0, 1):
            cell = Cell("fedcare", seed, 30, None, variant, setting)
            (tmp_path / f"{cell.key}.json").write_text(json.dumps(_val_doc((0.9, 0.9, 1.0), val)))
            cells.append(cell)
    md = experiment_tables("selection", cells, tmp_path, dataset="toy")[0]["selection.md"]
    iid, small = md.split("# Setting `small`")
    assert "**iid: Chosen on validation: `s2-warm`**" in iid
    assert "**small: Chosen on validation: `paper`**" in small
    assert "| paper | 0.6600 ± 0.0000 |" in small and "0.6600" not in iid


@pytest.mark.parametrize("features", ["paper", "admission"])
def test_the_recommended_report_pairs_the_preset_with_each_method_by_setting(tmp_path, features):
    from fedcare.experiments.cells import ALL_LABELS
    from fedcare_core.config.variants import recommended_candidate

    runs = {  # each feature set's preset is "recommended" in the tables
        (recommended_candidate(features), "fedcare"): ((0.80, 0.65, 1.7), (0.82, 0.66, 1.6)),
        ("paper", "fedcare"): ((0.78, 0.66, 1.8), (0.79, 0.60, 1.9)),
        ("paper", "fedavg"): ((0.70, 0.60, 2.0), (0.83, 0.61, 1.5)),
        (ALL_LABELS, "centralised"): ((0.90, 0.70, 1.2), (0.91, 0.71, 1.1)),
    }
    cells = []
    for setting in ("iid", "small"):
        for (variant, algorithm), values in runs.items():
            for seed, test in enumerate(values):
                cell = Cell(algorithm, seed, 30, None, variant, setting)
                doc = _val_doc(test, test)
                (tmp_path / f"{cell.key}.json").write_text(json.dumps(doc))
                cells.append(cell)
    files, frame, _ = experiment_tables("recommended", cells, tmp_path, dataset="toy")
    md = files["recommended.md"]
    assert md.count("the recommended preset minus each method") == 2
    assert "## small, K = 30: pooled test metrics" in md
    assert "| fedcare (paper) |" in md and f"| centralised ({ALL_LABELS}) |" in md
    # Against FedAvg: early discharge ahead on seed 0 only, LOS (lower is better) on seed 0.
    fedavg = next(line for line in md.splitlines() if line.startswith("| fedavg | 0.0"))
    assert "(1/2, p 1.000;" in fedavg.split("|")[2] and "(1/2, p 1.000;" in fedavg.split("|")[4]
    assert "(2/2, p 0.500;" in fedavg.split("|")[3]  # readmission ahead on both seeds
    assert "p_c n/a" in fedavg  # documents without the clients' sizes: no corrected test
    assert set(frame["setting"]) == {"iid", "small"}


def _clinical_doc(seed: int, algorithm: str) -> dict:
    """A run with clinical metrics and the clients' sizes."""
    rng = np.random.default_rng([seed, algorithm == "fedcare"])
    shift = 0.02 if algorithm == "fedcare" else 0.0
    early = 0.70 + shift + 0.01 * rng.standard_normal()
    doc = _doc(early, 0.62, 2.0)
    doc["objectives"]["early_discharge"]["clinical"] = {
        "auprc": 0.5, "brier": 0.24 - shift, "brier_reference": 0.25,
        "calibration_slope": 1.0, "ece": 0.01, "sensitivity": 0.8, "specificity": 0.3,
    }  # fmt: skip
    doc["objectives"]["los"]["clinical"] = {"bias_days": -0.5}
    doc["clients"] = [{"client": k, "n_train": 700, "n_val": 100, "n_test": 200} for k in range(3)]
    return doc


def test_comparison_reports_clinical_metrics_and_the_corrected_test(tmp_path):
    cells = []
    for algorithm in ("fedcare", "fedavg"):
        for seed in range(6):
            cell = Cell(algorithm, seed, 3)
            (tmp_path / f"{cell.key}.json").write_text(json.dumps(_clinical_doc(seed, algorithm)))
            cells.append(cell)
    files, runs, _ = experiment_tables("comparison", cells, tmp_path, dataset="toy")
    md = files["comparison.md"]
    assert "## Clinical metrics (pooled)" in md
    assert "early_discharge Brier" in md and "early_discharge base-rate Brier" in md
    assert "los bias (days)" in md and "readmission AUPRC" not in md  # no value: no column
    assert set(runs["n_train"]) == {2100} and set(runs["n_test"]) == {600}
    diff = paired_differences(runs, "fedcare", ["early_discharge"])
    from fedcare_core.evaluation.significance import nadeau_bengio_ttest

    values = (
        runs[runs.algorithm == "fedcare"].set_index("seed")["early_discharge"]
        - runs[runs.algorithm == "fedavg"].set_index("seed")["early_discharge"]
    )
    expected = nadeau_bengio_ttest(values.to_numpy(), 2100, 600)
    row = diff.iloc[0]
    assert row["early_discharge.nb.p"] == pytest.approx(expected.p)
    assert row["early_discharge.nb.low"] == pytest.approx(expected.low)
    # the correction makes the test more cautious than the plain paired t-test
    from scipy.stats import ttest_rel

    plain = ttest_rel(
        runs[runs.algorithm == "fedcare"].sort_values("seed")["early_discharge"],
        runs[runs.algorithm == "fedavg"].sort_values("seed")["early_discharge"],
    ).pvalue
    assert expected.p > plain
    assert f"p_c {expected.p:.3f}" in md


@pytest.mark.parametrize(
    ("experiment", "cell", "row"),
    [
        ("disparity", lambda a, s: Cell(a, s, 3, 0.2), "| 0.2 | fedcare | "),
        ("clients", lambda a, s: Cell(a, s, 5), "| 5 | fedcare | "),
        (
            "ablation",
            lambda a, s: Cell(a, s, 3, None, "solver-slsqp"),
            "| solver-slsqp | fedcare | ",
        ),
    ],
)
def test_the_sweeps_report_clinical_metrics_beside_their_aurocs(tmp_path, experiment, cell, row):
    cells = []
    for algorithm in ("fedcare", "fedcare-b"):
        for seed in range(3):
            c = cell(algorithm, seed)
            (tmp_path / f"{c.key}.json").write_text(json.dumps(_clinical_doc(seed, algorithm)))
            cells.append(c)
    md = experiment_tables(experiment, cells, tmp_path, dataset="toy")[0][f"{experiment}.md"]
    clinical = md[md.index("## Clinical metrics (pooled)") :]
    assert "early_discharge Brier" in clinical and "early_discharge base-rate Brier" in clinical
    assert row in clinical  # one row per setting and method


@pytest.mark.parametrize(
    ("experiment", "cell", "headings"),
    [
        ("clients", lambda a, s, v: Cell(a, s, v), ("## K = 3:", "## K = 5:")),
        ("disparity", lambda a, s, v: Cell(a, s, 10, v / 10), ("## ρ = 0.3:", "## ρ = 0.5:")),
    ],
)
def test_the_sweeps_pair_fedcare_with_each_method_within_each_swept_value(
    tmp_path, experiment, cell, headings
):
    # FedCARE is ahead of FedAvg on early discharge on all 3 seeds at the first value and
    # behind on all 3 at the second: pooling the values would hide both.
    cells = []
    for value, sign in ((3, 1), (5, -1)):
        for seed in range(3):
            for algorithm, early in (("fedcare", 0.70 + sign * 0.05), ("fedavg", 0.70)):
                c = cell(algorithm, seed, value)
                doc = _doc(early + seed / 100, 0.6, 2.0)
                (tmp_path / f"{c.key}.json").write_text(json.dumps(doc))
                cells.append(c)
    md = experiment_tables(experiment, cells, tmp_path, dataset="toy")[0][f"{experiment}.md"]
    first, second = (md.index(f"{h} FedCARE minus each method, paired by seed") for h in headings)
    ahead, behind = md[first:second], md[second:]
    assert "| fedavg | 0.0500 ± 0.0000 (3/3, p 0.250;" in ahead
    assert "| fedavg | -0.0500 ± 0.0000 (0/3, p 0.250;" in behind


def test_the_ablation_pairs_the_papers_variant_with_each_other_within_each_method(tmp_path):
    # FedCARE's l2 variant trails the paper's by 0.02 early-discharge AUROC on every seed;
    # FedCARE-B's is level: the pairs must not mix the methods.
    cells = []
    for seed in range(3):
        for algorithm, variant, early in (
            ("fedcare", "paper", 0.72),
            ("fedcare", "normalise-l2", 0.70),
            ("fedcare-b", "paper", 0.65),
            ("fedcare-b", "normalise-l2", 0.65),
        ):
            c = Cell(algorithm, seed, 10, None, variant)
            doc = _doc(early + seed / 100, 0.6, 2.0)
            (tmp_path / f"{c.key}.json").write_text(json.dumps(doc))
            cells.append(c)
    md = experiment_tables("ablation", cells, tmp_path, dataset="toy")[0]["ablation.md"]
    fedcare = md.index("## fedcare: the `paper` variant minus each other, paired by seed")
    fedcare_b = md.index("## fedcare-b: the `paper` variant minus each other, paired by seed")
    assert "| normalise-l2 | 0.0200 ± 0.0000 (3/3, p 0.250;" in md[fedcare:fedcare_b]
    assert "| normalise-l2 | 0.0000 ± 0.0000 (0/3, p n/a;" in md[fedcare_b:]


def test_selection_tables_hide_the_clinical_test_metrics(tmp_path):
    from fedcare.experiments.report import _is_test_column

    metrics = {"readmission": "auroc", "los": "mae_days"}
    assert _is_test_column("readmission.brier", metrics)
    assert _is_test_column("los.bias_days", metrics)
    assert not _is_test_column("readmission.val", metrics)
    assert not _is_test_column("n_test", metrics)


def _preference_doc(seed: int, preference: str) -> dict:
    """A run with decision-threshold rates and a race gap that each preference moves."""
    doc = _doc(0.70 - 0.01 * (preference == "sensitivity"), 0.62, 2.0)
    sensitivity = {"plain": 0.5, "sensitivity": 0.9, "fair-race": 0.55}[preference] + 0.01 * seed
    gap = {"plain": 0.10, "sensitivity": 0.11, "fair-race": 0.05}[preference] + 0.01 * seed
    for name in ("early_discharge", "readmission"):
        doc["objectives"][name]["clinical"] = {
            "decision_sensitivity": sensitivity, "decision_specificity": 1.0 - sensitivity,
            "net_benefit": 0.05, "net_benefit_all": 0.02,
        }  # fmt: skip
        doc["objectives"][name]["subgroups"] = {
            "race": {"auroc": {"gap": gap}, "sensitivity": {"gap": gap / 2}},
            "sex": {"auroc": {"gap": 0.01}},
        }
    doc["clients"] = [{"client": k, "n_train": 700, "n_val": 100, "n_test": 200} for k in range(3)]
    return doc


@pytest.mark.parametrize("features", [None, "admission"])
def test_the_preferences_report_pairs_each_preference_with_the_plain_preset(tmp_path, features):
    from fedcare.experiments.cells import experiment_cells
    from fedcare_core.config.variants import (
        PREFERENCES,
        preference_variant,
        recommended_candidate,
    )

    chosen = ("sensitivity", "fair-race")
    cells = experiment_cells("preferences", 3, variants=chosen, features=features)
    preset = recommended_candidate(features)  # the feature set's own preset
    assert {c.variant for c in cells} == {
        preset,
        preference_variant("sensitivity", features),
        preference_variant("fair-race", features),
    }
    assert all(c.variant.startswith(preset) for c in cells)
    assert {c.clients for c in cells} == {30} and len(cells) == 9
    assert len(experiment_cells("preferences", 3)) == 3 * (1 + len(PREFERENCES))
    names = {preset: "plain"} | {preference_variant(p, features): p for p in chosen}
    for cell in cells:
        doc = _preference_doc(cell.seed, names[cell.variant])
        (tmp_path / f"{cell.key}.json").write_text(json.dumps(doc))
    files, _, _ = experiment_tables("preferences", cells, tmp_path, dataset="toy")
    md = files["preferences.md"]
    assert "sensitivity minus plain, paired by seed" in md
    assert "fair-race minus plain, paired by seed" in md
    assert "readmission AUROC gap by race" in md and "gap by sex" not in md
    sens = next(line for line in md.splitlines() if line.startswith("| sensitivity | -0.0100"))
    cells_of = sens.split("|")
    heads = next(line for line in md.splitlines() if line.startswith("| method |")).split("|")
    column = heads.index(" Δ early_discharge.decision_sensitivity ")
    assert cells_of[column].strip().startswith("0.4000 ± 0.0000 (3/3")
    paired = md.split("fair-race minus plain, paired by seed")[1]
    fair = next(line for line in paired.splitlines() if line.startswith("| fair-race |"))
    column = heads.index(" Δ readmission.gap.auroc.race ")
    assert fair.split("|")[column].strip().startswith("-0.050 ± 0.000 (3/3")  # narrower: ahead


def test_a_preference_variant_sets_the_preset_and_its_preferences():
    from fedcare_core.config.variants import (
        RECOMMENDED_ADMISSION_CANDIDATE,
        RECOMMENDED_CANDIDATE,
        preference_variant,
        variant_overrides,
    )

    base = ExperimentConfig(data=DataConfig(clients=3))
    config = Cell("fedcare", 0, 3, None, preference_variant("fair-race")).config(base)
    preset = Cell("fedcare", 0, 3, None, RECOMMENDED_CANDIDATE).config(base)
    assert config.preferences == "*:fair(race)"
    assert config.stage1 == preset.stage1 and config.stage2 == preset.stage2
    with pytest.raises(ConfigError, match="a preference of the preset"):
        variant_overrides("fair-sex")
    # on the admission-time partition the preference builds on that partition's preset
    admission = Cell("fedcare", 0, 3, None, preference_variant("sensitivity", "admission"))
    chosen = Cell("fedcare", 0, 3, None, RECOMMENDED_ADMISSION_CANDIDATE).config(base)
    config = admission.config(base)
    assert config.preferences == "*:sensitivity" and config.data.scaling == "federated"
    assert config.stage1 == chosen.stage1 and config.data == chosen.data

    # the γ sweep's variants: the same preference at another fairness weight, default 1 elsewhere
    stronger = Cell("fedcare", 0, 3, None, preference_variant("fair-race-sensitivity-gamma4"))
    config = stronger.config(base)
    assert config.preferences == "*:fair(race,sensitivity)" and config.fairness_weight == 4.0
    assert (
        Cell("fedcare", 0, 3, None, preference_variant("fair-race")).config(base).fairness_weight
        == 1.0
    )
    cells = experiment_cells("preferences", 2, variants=["fair-race-gamma0.25"])
    assert [c.variant for c in cells[:2]] == [
        RECOMMENDED_CANDIDATE,
        preference_variant("fair-race-gamma0.25"),
    ]
    with pytest.raises(ConfigError, match="unknown preference"):
        experiment_cells("preferences", 2, variants=["fair-race-gamma2"])


def test_the_privacy_report_shows_the_noise_and_each_accountants_epsilon_for_it(tmp_path):
    cells = []
    for seed, (z, pld, rdp) in enumerate(((37.3, 1.0, 1.09), (37.3, 1.0, 1.09))):
        for algorithm in ("fedcare", "fedavg"):
            cell = Cell(algorithm, seed, 10, None, "dp-eps1")
            doc = _doc(0.7 + seed / 100, 0.6, 2.0) | {
                "privacy": {
                    "noise_multiplier": z, "epsilon": pld, "dp_accountant": "pld",
                    "epsilon_by_accountant": {"pld": pld, "rdp": rdp},
                },
            }  # fmt: skip
            (tmp_path / f"{cell.key}.json").write_text(json.dumps(doc))
            cells.append(cell)
    files, _, _ = experiment_tables("privacy", cells, tmp_path, dataset="toy")
    md = files["privacy.md"]
    head = next(line for line in md.splitlines() if line.startswith("| variant |"))
    assert head.endswith("| z | ε spent | ε by PLD | ε by RDP | runs |"), head
    row = next(line for line in md.splitlines() if line.startswith("| dp-eps1 | fedcare |"))
    assert "| 37.30 ± 0.00 | 1.000 ± 0.000 | 1.000 ± 0.000 | 1.090 ± 0.000 | 2 |" in row, row
