"""The clinical label options: declared once, offered by every entry, refused when unknown."""

from __future__ import annotations

import pytest

from fedcare.cli.commands import build_parser
from fedcare.cli.setting_flags import build_config
from fedcare_core.config import (
    EARLY_DISCHARGE_DEFINITIONS,
    READMISSION_EXCLUSIONS,
    DataConfig,
    ExperimentConfig,
)
from fedcare_core.errors import ConfigError


def test_the_defaults_are_the_papers_labels() -> None:
    data = DataConfig()
    assert (data.early_discharge, data.readmission_exclude) == ("los", "deaths")
    assert data.label_variants == ("30d", "los", "deaths")
    assert EARLY_DISCHARGE_DEFINITIONS == ("los", "home", "home-or-not")
    assert READMISSION_EXCLUSIONS == ("deaths", "deaths-ama-transfers")


@pytest.mark.parametrize(
    ("field", "value", "noun"),
    [
        ("early_discharge", "home-only", "early-discharge definition"),
        ("readmission_exclude", "deaths-and-ama", "readmission exclusion"),
        ("readmission", "60d", "readmission definition"),
    ],
)
def test_an_unknown_choice_is_refused_naming_the_setting(field: str, value: str, noun: str) -> None:
    with pytest.raises(ConfigError) as ei:
        DataConfig(**{field: value}).validate()  # type: ignore[arg-type]
    message = str(ei.value)
    assert f"unknown {noun} {value!r} (data.{field})" in message
    assert "expected one of" in message


def test_every_choice_validates_on_every_dataset() -> None:
    for dataset in ("diabetes130", "mimic3"):
        for early in EARLY_DISCHARGE_DEFINITIONS:
            for exclude in READMISSION_EXCLUSIONS:
                DataConfig(
                    dataset=dataset, early_discharge=early, readmission_exclude=exclude
                ).validate()


def test_the_flags_set_the_options() -> None:
    argv = ["run", "--early-discharge", "home", "--readmission-exclude", "deaths-ama-transfers"]
    config = build_config(build_parser("run").parse_args(argv))
    assert config.data.label_variants == ("30d", "home", "deaths-ama-transfers")
    with pytest.raises(SystemExit):
        build_parser("run").parse_args(["run", "--early-discharge", "short"])


def test_the_options_are_recorded_with_the_configuration() -> None:
    config = ExperimentConfig().with_overrides(data={"early_discharge": "home"})
    data = config.to_dict()["data"]
    assert data["early_discharge"] == "home" and data["readmission_exclude"] == "deaths"
