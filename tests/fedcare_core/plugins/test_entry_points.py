"""Extensions are found by their entry points: listed without importing, refused clearly."""

from __future__ import annotations

import sys

import pytest

from fedcare_core.plugins import PluginError, entry_names, load_entry
from fedcare_core.predict.predictors import CommonInput
from tests.installed_plugins import installed


def test_fedcares_own_extensions_are_declared_by_entry_points():
    assert entry_names("algorithm")[:3] == ("centralised", "fedavg", "fedcare")
    assert {"common", "own", "trees"} <= set(entry_names("predictor"))
    assert load_entry("predictor", "common") is CommonInput


def test_names_are_listed_without_importing_the_extension(tmp_path):
    with installed(tmp_path, "lazy-method", {"fedcare.algorithms": {"lazy": "lazy_mod:Lazy"}}):
        assert "lazy" in entry_names("algorithm")
        assert "lazy_mod" not in sys.modules  # named, not imported
        with pytest.raises(PluginError, match=r"algorithm 'lazy' \(lazy_mod:Lazy, from "
                           r"lazy-method\) cannot be loaded: ModuleNotFoundError"):  # fmt: skip
            load_entry("algorithm", "lazy")
    assert "lazy" not in entry_names("algorithm")


def test_an_unknown_name_lists_the_installed_ones():
    with pytest.raises(PluginError, match=r"unknown predictor 'pickle'; expected one of common"):
        load_entry("predictor", "pickle")
    with pytest.raises(ValueError, match="unknown extension kind 'widget'"):
        entry_names("widget")


def test_a_name_two_distributions_declare_is_refused_naming_both(tmp_path):
    entries = {"fedcare.predictors": {"common": "elsewhere:Common"}}
    with installed(tmp_path, "other-models", entries):
        with pytest.raises(PluginError, match=r"'common' is declared by two installed "
                           r"distributions, .*other-models \(elsewhere:Common\)"):  # fmt: skip
            entry_names("predictor")
