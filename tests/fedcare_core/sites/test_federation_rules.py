"""What a federation of sites cannot take from a configuration, and a preset named for it."""

from __future__ import annotations

import pytest

from fedcare_core.config import ExperimentConfig
from fedcare_core.config.presets import with_preset
from fedcare_core.errors import ConfigError
from fedcare_core.sites.federation_rules import (
    check_federation_config,
    check_preset_fits,
    federation_conflicts,
)


def _config(**data: object) -> ExperimentConfig:
    return ExperimentConfig().with_overrides(data=data) if data else ExperimentConfig()


def test_the_paper_configuration_has_no_conflict() -> None:
    assert federation_conflicts(_config()) == []
    check_federation_config(_config())


def test_each_conflict_names_its_setting_flag_and_fix() -> None:
    config = ExperimentConfig().with_overrides(algorithm="fedprox", data={"scaling": "federated"})
    conflicts = federation_conflicts(config)
    assert [(c.setting, c.flag, c.fix) for c in conflicts] == [
        ("algorithm", "--algorithm", "--algorithm fedcare"),
        ("data.scaling", "--scaling", "--scaling client"),
    ]
    with pytest.raises(ConfigError, match="runs fedcare or fedxgb, not 'fedprox'"):
        check_federation_config(config)


def test_a_published_split_is_a_conflict() -> None:
    config = _config(dataset="mimic3", cohort="benchmark-ihm", benchmark_split="/tmp/ihm")
    conflicts = federation_conflicts(config)
    assert [c.setting for c in conflicts] == ["data.benchmark_split"]


def test_a_preset_that_set_the_conflict_is_named_unless_a_flag_set_it() -> None:
    config = with_preset(ExperimentConfig(), "recommended-admission")
    with pytest.raises(ConfigError) as caught:
        check_preset_fits("recommended-admission", config, given=set())
    assert str(caught.value) == (
        "--preset recommended-admission sets data.scaling (--scaling) 'federated', which a "
        "federation of sites cannot take: it pools the clients' statistics before training, "
        "and sites prepare their files apart; add --scaling client to start from "
        "recommended-admission here"
    )
    check_preset_fits("recommended-admission", config, given={"--scaling"})  # the flag's
    check_preset_fits("recommended", with_preset(ExperimentConfig(), "recommended"), set())
    # a conflict the preset did not set is not the preset's
    check_preset_fits("paper", _config(scaling="federated"), given=set())
