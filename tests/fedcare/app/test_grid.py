"""The grid service: one declaration per grid option, the same checks from every entry."""

from __future__ import annotations

import argparse
import inspect
from pathlib import Path
from typing import Any

import pytest

from fedcare.app.grid import (
    GridRequest,
    check_grid_request,
    cli_spelling,
    flow_spelling,
)
from fedcare.app.grid_options import GRID_OPTIONS, PROGRAMME_NAME, experiments_of, options_of
from fedcare.cli.experiment import add_parser
from fedcare.experiments.cells import EXPERIMENTS, PROGRAMME
from fedcare_core.errors import ConfigError
from flows.experiment_flows import EXPERIMENT_FLOWS


def _experiment_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["experiment"]


def test_every_experiment_and_the_programme_is_a_flow() -> None:
    assert sorted(EXPERIMENT_FLOWS) == sorted([*EXPERIMENTS, PROGRAMME_NAME])
    for name, flow in EXPERIMENT_FLOWS.items():
        assert flow.name == f"fedcare-{name}"


@pytest.mark.parametrize("name", [*EXPERIMENTS, PROGRAMME_NAME])
def test_a_flow_offers_the_options_its_grid_uses_with_their_defaults(name: str) -> None:
    parameters = inspect.signature(EXPERIMENT_FLOWS[name].fn).parameters
    offered = {o.flow_parameter: o.default for o in options_of(name)}
    assert {p: v.default for p, v in parameters.items()} == offered
    # the options every grid has are always there; one only another experiment uses is not
    assert {"seeds", "dataset", "rounds", "out_dir", "workers", "dask_address"} <= set(offered)
    if name == "comparison":
        assert "ratios" not in offered and "budgets" not in offered


def test_the_cli_offers_every_option_with_the_same_default() -> None:
    parser = _experiment_parser()
    by_dest = {a.dest: a for a in parser._actions}
    for option in GRID_OPTIONS:
        action = by_dest[option.name]
        assert option.cli_flag in action.option_strings
        assert action.default == option.default, option.name
        assert action.help == option.help
    flow_names = {o.flow_parameter for name in EXPERIMENT_FLOWS for o in options_of(name)}
    assert flow_names == {o.flow_parameter for o in GRID_OPTIONS}  # each option in some flow


BAD_VALUES: list[tuple[str, dict[str, Any], str]] = [
    ("clients", {"counts": [3, 0]}, "≥ 2"),
    ("clients", {"counts": [3, 5, 3]}, "3 given twice"),
    ("disparity", {"ratios": [0.2, float("nan")]}, "nan"),
    ("disparity", {"ratios": [0.2, 1.0]}, "(0, 1)"),
    ("privacy", {"budgets": [3.0, -1.0]}, "positive ε"),
    ("comparison", {"algorithms": ["fedavg", "nope"]}, "'nope'"),
    ("ablation", {"variants": ["paper", "bogus"]}, "'bogus'"),
    ("recommended", {"settings": ["iid", "tiny"]}, "'tiny'"),
    ("comparison", {"seeds": 0}, "must be ≥ 1"),
    ("comparison", {"clients": 1}, "must be ≥ 2"),
    ("comparison", {"workers": 0}, "must be ≥ 1"),
    ("comparison", {"dask_address": "not-an-address"}, "must be"),
    ("comparison", {"features": "nope"}, "'nope'"),
    ("comparison", {"dataset": "nope"}, "'nope'"),
]


@pytest.mark.parametrize(("name", "options", "words"), BAD_VALUES)
def test_both_entries_refuse_a_bad_value_with_the_same_message_naming_their_option(
    tmp_path: Path, name: str, options: dict[str, Any], words: str
) -> None:
    request = GridRequest(name, {**options, "out": str(tmp_path / "out")})
    messages = []
    for spell in (cli_spelling, flow_spelling):
        with pytest.raises(ConfigError) as error:
            check_grid_request(request, spell)
        messages.append(str(error.value))
    ((option_name, _),) = options.items()
    option = next(o for o in GRID_OPTIONS if o.name == option_name)
    cli, flow = messages
    assert cli.startswith(option.cli_flag) and flow.startswith(option.flow_parameter)
    assert words in cli
    assert cli.removeprefix(option.cli_flag) == flow.removeprefix(option.flow_parameter)
    assert not (tmp_path / "out").exists()


def test_workers_and_an_existing_cluster_exclude_each_other(tmp_path: Path) -> None:
    request = GridRequest("comparison", {"workers": 2, "dask_address": "tcp://10.0.0.5:8786"})
    with pytest.raises(ConfigError, match=r"--workers sizes the local cluster.*--dask-address"):
        check_grid_request(request, cli_spelling)


def test_the_programme_runs_its_three_experiments_on_one_base(tmp_path: Path) -> None:
    request = GridRequest(PROGRAMME_NAME, {"seeds": 2, "rounds": 3, "out": str(tmp_path)})
    prepared = check_grid_request(request)
    assert tuple(prepared.cells) == PROGRAMME == experiments_of(PROGRAMME_NAME)
    assert prepared.base.stage1.rounds == 3
    assert prepared.cells_dir.parent == tmp_path / "cells"
    assert all({c.seed for c in cells} == {0, 1} for cells in prepared.cells.values())
    assert not prepared.cells_dir.exists()  # checking writes nothing


def test_an_option_shapes_only_the_grids_that_use_it(tmp_path: Path) -> None:
    ratios = check_grid_request(GridRequest("disparity", {"ratios": [0.3], "seeds": 1}))
    assert {c.rho for c in ratios.cells["disparity"]} == {0.3}
    request = GridRequest("privacy", {"budgets": [2.0, None], "counts": [4], "seeds": 1})
    cells = check_grid_request(request).cells["privacy"]
    assert {c.clients for c in cells} == {4}
    assert len({c.key for c in cells}) == len(cells)
    with pytest.raises(ConfigError, match="unknown experiment"):
        check_grid_request(GridRequest("nope"))
    with pytest.raises(ConfigError, match="unknown grid option"):
        check_grid_request(GridRequest("comparison", {"bogus": 1}))


@pytest.mark.parametrize(
    ("name", "options", "words"),
    [
        ("comparison", {"ratios": [0.1]}, "--ratios (used by disparity): the comparison"),
        ("recommended", {"variants": ["paper"]}, "--variants (used by ablation, selection, "),
        ("clients", {"settings": ["iid"], "budgets": [1.0]}, "--budgets (used by privacy); "),
        (PROGRAMME_NAME, {"algorithms": ["fedavg"], "counts": [3]}, None),  # its sweeps use them
    ],
)
def test_an_option_no_requested_grid_uses_is_refused_not_ignored(
    tmp_path: Path, name: str, options: dict[str, Any], words: str | None
) -> None:
    request = GridRequest(name, {**options, "seeds": 1, "out": str(tmp_path / "out")})
    if words is None:
        check_grid_request(request, cli_spelling)
        return
    with pytest.raises(ConfigError) as error:
        check_grid_request(request, cli_spelling)
    assert words in str(error.value) and "does not use" in str(error.value)
    assert not (tmp_path / "out").exists()
