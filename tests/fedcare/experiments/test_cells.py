"""Experiment grids: sizes, keys, shared Stage 1 and configuration of a cell."""

from __future__ import annotations

import pytest

from fedcare.experiments.cells import (
    CLIENTS_ALGORITHMS,
    COMPARISON_ALGORITHMS,
    Cell,
    ablation,
    clients_sweep,
    comparison,
    disparity_sweep,
    experiment_cells,
    privacy_sweep,
    unique,
)
from fedcare.experiments.engine import plan_jobs
from fedcare_core.config import ExperimentConfig
from fedcare_core.errors import ConfigError
from fedcare_core.resume.keys import base_fingerprint


def test_grid_sizes_follow_the_paper():
    assert len(comparison(10)) == 10 * len(COMPARISON_ALGORITHMS)
    assert len(clients_sweep(10)) == 5 * 10 * len(CLIENTS_ALGORITHMS)
    assert len(disparity_sweep(10)) == 5 * 10 * 2
    assert {c.rho for c in disparity_sweep(2)} == {0.1, 0.2, 0.3, 0.4, 0.5}
    assert {c.algorithm for c in disparity_sweep(2)} == {"fedcare", "fedcare-b"}


def test_the_k10_cells_of_the_client_sweep_are_the_comparisons():
    programme = comparison(3) + clients_sweep(3)
    shared = {c.key for c in comparison(3)} & {c.key for c in clients_sweep(3)}
    assert len(shared) == 3 * len(set(COMPARISON_ALGORITHMS) & set(CLIENTS_ALGORITHMS))
    assert len(unique(programme)) == len(programme) - len(shared)


def test_fedcare_and_fedcare_b_of_one_setting_share_a_job():
    jobs = plan_jobs(comparison(2, algorithms=("fedcare", "fedcare-b", "fedavg")))
    shared = [j for j in jobs if len(j.cells) == 2]
    assert len(jobs) == 4 and len(shared) == 2
    for job in shared:
        assert {c.algorithm for c in job.cells} == {"fedcare", "fedcare-b"}
        assert len({(c.seed, c.clients, c.rho, c.variant) for c in job.cells}) == 1
    assert [j.cost for j in jobs] == sorted((j.cost for j in jobs), reverse=True)


def test_a_cell_sets_algorithm_seed_k_rho_and_its_ablation():
    base = ExperimentConfig()
    cfg = Cell("fedcare-b", 4, 20, 0.3, "normalise-l2").config(base)
    assert (cfg.algorithm, cfg.seed, cfg.data.clients, cfg.data.rho) == ("fedcare-b", 4, 20, 0.3)
    assert cfg.stage1.normalise == "l2"
    assert cfg.stage1.rounds == base.stage1.rounds
    assert Cell("fedcare", 0, 10, None, "qp-scope-backbone").config(base).stage1.qp_scope == (
        "backbone"
    )
    assert {c.variant for c in ablation(1)} >= {"paper", "solver-slsqp", "normalise-l2"}


def test_unknown_names_are_refused():
    with pytest.raises(ConfigError, match="unknown ablation"):
        ablation(1, variants=("nope",))
    with pytest.raises(ConfigError, match="unknown variant"):
        Cell("fedcare", 0, 10, None, "nope").config(ExperimentConfig())
    with pytest.raises(ConfigError, match="unknown experiment"):
        experiment_cells("tables", 1)
    with pytest.raises(ConfigError, match="at least one seed"):
        comparison(0)


def test_the_fingerprint_ignores_what_cells_replace_and_sees_the_rest():
    base = ExperimentConfig()
    moved = base.with_overrides(algorithm="fedavg", seed=3, data={"clients": 30, "rho": 0.2})
    assert base_fingerprint(moved) == base_fingerprint(base)
    assert base_fingerprint(base.with_overrides(stage1={"rounds": 5})) != base_fingerprint(base)


def test_the_privacy_grid_crosses_budgets_counts_and_methods_and_reuses_the_comparison():
    cells = privacy_sweep(10)
    assert len(cells) == 4 * 2 * 10 * 3
    assert {c.variant for c in cells} == {"dp-eps1", "dp-eps3", "dp-eps8", "paper"}
    # ε = ∞ at K = 10 is the comparison's runs, not new ones.
    shared = {c.key for c in cells} & {c.key for c in comparison(10)}
    assert len(shared) == 10 * 3
    assert experiment_cells("privacy", 2, counts=[5], budgets=[2.5]) == [
        Cell(a, s, 5, None, "dp-eps2.5") for s in (0, 1) for a in ("fedcare", "fedcare-b", "fedavg")
    ]


def test_a_privacy_cell_sets_its_budget_and_seeds_its_noise_by_the_cells_seed():
    cfg = Cell("fedcare", 7, 10, None, "dp-eps3").config(ExperimentConfig())
    assert cfg.stage1.dp_epsilon == 3.0 and cfg.stage1.dp_noise_seed == 7
    assert Cell("fedcare", 7, 10).config(ExperimentConfig()).stage1.privacy() is None
    for bad in ("dp-eps0", "dp-epsx", "dp-eps-1", "dp-epsnan"):
        with pytest.raises(ConfigError, match="unknown variant"):
            Cell("fedcare", 0, 10, None, bad).config(ExperimentConfig())


def test_the_selection_grid_runs_fedcare_as_the_paper_and_every_candidate():
    from fedcare.experiments.cells import CANDIDATES

    cells = experiment_cells("selection", 2)
    assert {c.algorithm for c in cells} == {"fedcare"} and {c.clients for c in cells} == {30}
    assert [c.variant for c in cells[::2]] == ["paper", *CANDIDATES]
    for cell in cells:
        config = cell.config(ExperimentConfig()).validate()
        for section, values in CANDIDATES.get(cell.variant, {}).items():
            for key, value in values.items():
                assert getattr(getattr(config, section), key) == value
    with pytest.raises(ConfigError, match="unknown candidate"):
        experiment_cells("selection", 1, variants=["qp-scope-backbone"])


def test_the_selection_grid_runs_in_each_setting_asked_and_keeps_its_iid_keys():
    from fedcare.experiments.cells import CANDIDATES, SMALL_HOSPITAL_PATIENTS

    iid = experiment_cells("selection", 2)
    assert {c.setting for c in iid} == {"iid"}
    assert all("__small" not in c.key and "__iid" not in c.key for c in iid)
    both = experiment_cells("selection", 2, settings=["iid", "small"])
    assert both[: len(iid)] == iid and len(both) == 2 * 2 * (1 + len(CANDIDATES))
    small = [c for c in both if c.setting == "small"]
    assert all(c.key.endswith(f"__small__seed{c.seed}") for c in small)
    capped = small[0].config(ExperimentConfig()).validate()
    assert capped.data.max_patients_per_client == SMALL_HOSPITAL_PATIENTS
    with pytest.raises(ConfigError, match="unknown setting"):
        experiment_cells("selection", 1, settings=["tiny"])


def test_the_recommended_grid_pairs_the_preset_with_each_method_per_setting_and_seed():
    from fedcare.experiments.cells import (
        ALL_LABELS,
        RECOMMENDED_BASELINES,
        RECOMMENDED_CANDIDATE,
        SMALL_HOSPITAL_PATIENTS,
    )
    from fedcare_core.config.presets import PRESETS

    cells = experiment_cells("recommended", 3)
    assert len(cells) == 2 * 3 * (1 + len(RECOMMENDED_BASELINES))
    assert {c.setting for c in cells} == {"iid", "small"} and {c.clients for c in cells} == {30}
    preset = [c for c in cells if c.variant == RECOMMENDED_CANDIDATE]
    assert {(c.algorithm, c.setting, c.seed) for c in preset} == {
        ("fedcare", s, seed) for s in ("iid", "small") for seed in range(3)
    }
    base = ExperimentConfig()
    config = preset[0].config(base)
    assert config.with_overrides(**PRESETS["recommended"]) == config  # the preset's fields
    small = next(c for c in cells if c.setting == "small" and c.algorithm == "fedavg")
    assert small.config(base).data.max_patients_per_client == SMALL_HOSPITAL_PATIENTS
    assert small.config(base).stage1 == base.stage1  # the baselines keep the paper's settings
    assert small.key.endswith("__small__seed0") and "__iid" not in preset[0].key
    assert Cell("fedavg", 0, 10).key == "paper__fedavg__K10__rhodefault__seed0"  # unchanged
    admission = base.with_overrides(data={"features": "admission"})
    with pytest.raises(ConfigError, match="past its prediction time"):
        Cell("centralised", 1, 10, None, ALL_LABELS).config(admission)
    everything = Cell("centralised", 1, 10, None, ALL_LABELS, "dirichlet").config(base)
    assert everything.data.objectives_per_client == 3
    assert everything.data.client_split == "dirichlet"
    grid = experiment_cells(
        "recommended", 1, counts=[10], algorithms=[ALL_LABELS], settings=["dirichlet"]
    )
    assert [(c.algorithm, c.variant) for c in grid] == [
        ("fedcare", RECOMMENDED_CANDIDATE),
        ("centralised", ALL_LABELS),
    ]
    with pytest.raises(ConfigError, match="unknown setting"):
        experiment_cells("recommended", 1, settings=["tiny"])
    with pytest.raises(ConfigError, match="unknown setting"):
        Cell("fedavg", 0, 10, setting="tiny").config(base)
    # Settings never share Stage 1.
    assert len(plan_jobs(experiment_cells("recommended", 1, algorithms=["fedcare"]))) == 4
