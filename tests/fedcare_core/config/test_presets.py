"""--preset: the paper's configuration, or the candidate the selection chose on validation."""

from __future__ import annotations

import pytest

from fedcare.experiments.cells import CANDIDATES
from fedcare_core.config import ExperimentConfig
from fedcare_core.config.presets import PRESETS, RECOMMENDED_CANDIDATE, with_preset
from fedcare_core.errors import ConfigError


def test_paper_is_the_default_configuration_and_recommended_a_selection_candidate():
    assert with_preset(ExperimentConfig(), "paper") == ExperimentConfig()
    assert RECOMMENDED_CANDIDATE in CANDIDATES
    recommended = with_preset(ExperimentConfig(), "recommended")
    assert recommended != ExperimentConfig()
    for section, values in PRESETS["recommended"].items():
        for key, value in values.items():
            assert getattr(getattr(recommended, section), key) == value


def test_the_admission_preset_is_the_admission_selection_choice_with_its_feature_set():
    from fedcare.cli.run_options import PRESET_NAMES
    from fedcare_core.config.variants import (
        RECOMMENDED_ADMISSION_CANDIDATE,
        recommended_candidate,
    )

    assert PRESET_NAMES == tuple(PRESETS)  # the parser's choices, spelled without numpy
    admission = with_preset(ExperimentConfig(), "recommended-admission")
    assert (admission.data.features, admission.data.scaling) == ("admission", "federated")
    recommended = with_preset(ExperimentConfig(), "recommended")
    assert (admission.stage1, admission.stage2) == (recommended.stage1, recommended.stage2)
    assert recommended_candidate("admission") == RECOMMENDED_ADMISSION_CANDIDATE
    assert recommended_candidate("paper") == recommended_candidate(None) == RECOMMENDED_CANDIDATE
    from fedcare.experiments.cells import experiment_cells

    preset = {c.variant for c in experiment_cells("recommended", 1, features="admission")}
    assert RECOMMENDED_ADMISSION_CANDIDATE in preset and RECOMMENDED_CANDIDATE not in preset


def test_a_preset_keeps_what_it_does_not_set_and_unknown_ones_are_refused():
    base = ExperimentConfig().with_overrides(stage1={"rounds": 7}, seed=3)
    out = with_preset(base, "recommended")
    assert (out.stage1.rounds, out.seed) == (7, 3)
    with pytest.raises(ConfigError, match=r"unknown preset 'best' \(--preset\)"):
        with_preset(base, "best")


def test_flags_win_over_the_preset_on_the_command_line():
    from fedcare.cli.commands import build_parser as _parser
    from fedcare.cli.setting_flags import build_config

    args = _parser().parse_args(["run", "--preset", "recommended", "--stage2-head-init", "fresh"])
    config = build_config(args)
    assert config.stage2.head_init == "fresh"
    preset = with_preset(ExperimentConfig(), "recommended")
    assert config.stage2.backbone_lr_scale == preset.stage2.backbone_lr_scale


def test_the_flow_takes_the_preset_as_a_parameter():
    from flows.flow_parameters import FlowParameters

    (config,) = FlowParameters.of(preset="recommended").experiment_configs()
    assert config.stage2 == with_preset(ExperimentConfig(), "recommended").stage2
    with pytest.raises(ConfigError, match="unknown preset"):
        FlowParameters.of(preset="nope").experiment_configs()
