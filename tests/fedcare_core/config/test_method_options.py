"""A method's own settings: declared in its folder, they join the baselines section."""

from __future__ import annotations

import dataclasses
import pickle
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from fedcare_core.algorithms.fedxgb.options import FedXgbOptions
from fedcare_core.algorithms.pafnet.options import PafnetOptions
from fedcare_core.config import ExperimentConfig, all_settings
from fedcare_core.config.fields import POSITIVE
from fedcare_core.config.method_options import (
    MethodOptions,
    baselines,
    baselines_class,
    options_classes,
)
from fedcare_core.config.sections import BASELINES_GROUP, BaselineConfig
from fedcare_core.config.settings import setting
from fedcare_core.errors import ConfigError
from fedcare_core.plugins import PluginError
from tests.installed_plugins import installed


def test_each_methods_options_join_the_baselines_section_with_the_shared_settings():
    names = [f.name for f in dataclasses.fields(baselines_class())]
    shared = [f.name for f in dataclasses.fields(BaselineConfig)]
    assert names[: len(shared)] == shared
    for cls in options_classes():
        assert {f.name for f in dataclasses.fields(cls)} <= set(names)
    raw = {"algorithm": "fedprox", "baselines": {"pafnet_latent": 16, "prox_mu": 0.1}}
    config = ExperimentConfig.from_dict(raw)
    assert PafnetOptions.of(config.baselines) == PafnetOptions(pafnet_latent=16)
    assert config.to_dict()["baselines"]["prox_mu"] == 0.1
    assert pickle.loads(pickle.dumps(config)) == config  # a grid's workers get the same class
    with pytest.raises(ConfigError, match=r"baselines\.fedxgb_depth must lie in"):
        ExperimentConfig.from_dict({"baselines": {"fedxgb_depth": 40}})
    with pytest.raises(ConfigError, match="unknown fedxgb strategy 'x'"):
        ExperimentConfig().with_overrides(baselines={"fedxgb_strategy": "x"})
    assert FedXgbOptions.of(baselines()) == FedXgbOptions()


@dataclass(frozen=True)
class TrimOptions(MethodOptions):
    """An outside method's own setting."""

    trim_share: float = setting(0.1, help="share trimmed", range=POSITIVE, group=BASELINES_GROUP)


@dataclass(frozen=True)
class ClashingOptions(MethodOptions):
    """Declares a name the shared settings hold."""

    lr: float = setting(0.1, help="clash", group=BASELINES_GROUP)


@pytest.fixture
def trim(tmp_path: Path) -> Iterator[None]:
    group = {"fedcare.options": {"trim": f"{__name__}:TrimOptions"}}
    with installed(tmp_path / "site", "trim-method", group):
        yield
    assert "trim_share" not in {f.name for f in dataclasses.fields(baselines_class())}


def test_an_installed_methods_options_are_set_checked_and_offered_like_the_others(trim):
    config = ExperimentConfig.from_dict({"baselines": {"trim_share": 0.3}})
    assert TrimOptions.of(config.baselines).trim_share == 0.3
    assert "baselines.trim_share" in {ref.path for ref in all_settings()}
    with pytest.raises(ConfigError, match=r"baselines\.trim_share must be"):
        ExperimentConfig.from_dict({"baselines": {"trim_share": -1.0}})


def test_an_option_two_declare_is_refused_naming_both(tmp_path: Path):
    group = {"fedcare.options": {"clash": f"{__name__}:ClashingOptions"}}
    with installed(tmp_path / "site", "clashing-method", group):
        with pytest.raises(PluginError, match="'lr' is declared by both the shared settings"):
            baselines_class()
