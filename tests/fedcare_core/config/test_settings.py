"""A setting that only matters with another (``Setting.needs``) is refused alone, not ignored."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from fedcare_core.config import ExperimentConfig
from fedcare_core.config.settings import check_effects, setting
from fedcare_core.config.stages import Stage1Config
from fedcare_core.errors import ConfigError


@dataclass(frozen=True)
class _Section:
    on: float | None = setting(None, help="turns it on", flag="on")
    level: int = setting(1, help="how much", flag="level", needs=("on",), needs_why="it is off")
    note: str = setting("", help="a note", needs=("on", "level"))


def test_a_setting_away_from_its_default_needs_one_of_its_settings() -> None:
    check_effects(_Section(), "s")
    check_effects(_Section(on=2.0, level=3), "s")
    with pytest.raises(ConfigError) as exc:
        check_effects(_Section(level=3), "s")
    assert str(exc.value) == "s.level (--level) has no effect without s.on (--on): it is off"
    check_effects(_Section(note="x"), "s")  # level (1) counts as set: not None, false or empty


@pytest.mark.parametrize(
    "field", [("dp_delta", 1e-6), ("dp_clip", 2.0), ("dp_accountant", "rdp"), ("dp_noise_seed", 3)]
)
def test_the_dp_settings_need_dp_on(field: tuple[str, object]) -> None:
    name, value = field
    with pytest.raises(ConfigError, match=rf"stage1\.{name} \(--{name.replace('_', '-')}\) has"):
        Stage1Config(**{name: value}).validate()  # type: ignore[arg-type]
    Stage1Config(**{name: value, "dp_noise_multiplier": 1.0}).validate()  # type: ignore[arg-type]
    Stage1Config(**{name: value, "dp_epsilon": 5.0}).validate()  # type: ignore[arg-type]


def test_a_preference_weight_needs_a_preference_of_its_kind() -> None:
    ExperimentConfig().check_preference_weights()
    ExperimentConfig(
        fairness_weight=2.0, preferences="los:plain *:fair(race)"
    ).check_preference_weights()
    with pytest.raises(ConfigError, match=r"^fairness_weight \(--fairness-weight\) has no effect"):
        ExperimentConfig(
            fairness_weight=2.0, preferences="*:sensitivity"
        ).check_preference_weights()
    with pytest.raises(ConfigError, match=r"^sensitivity_weight \(--sensitivity-weight\)"):
        ExperimentConfig(sensitivity_weight=3.0).check_preference_weights()
