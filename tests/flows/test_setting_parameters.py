"""Every setting is reachable from the config, the CLI and the flow, with one default and range.

The settings' declarations (:mod:`fedcare_core.config.settings`) are the one source: these
tests fail when an entry offers a setting another does not, or gives it another default, range
or meaning.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import pytest

from fedcare.cli.commands import build_parser as _parser
from fedcare.cli.main import build_stage1_runner
from fedcare.cli.options_doc import markdown
from fedcare.cli.setting_flags import build_config, setting_values
from fedcare.flower.flower_options import FlowerConfig, flagged_options
from fedcare_core.config import ExperimentConfig, all_settings, flagged_settings, sections_of
from fedcare_core.config.settings import SettingRef
from fedcare_core.errors import ConfigError
from flows.fedcare_flow import fedcare_pipeline
from flows.flow_parameters import GRID_SETTINGS, FlowParameters

FLAGGED = flagged_settings()
#: The Flower options offered by name (``round_timeout``, …), by flag dest.
FLOWER = {str(ref.dest): ref for ref in flagged_options()}
#: The flow's names of the settings it takes as grids (the others: the setting's own name).
FLOW_NAMES = {"algorithm": "algorithm", "seed": "seeds", "dataset": "dataset"}
#: Flow parameters that are not configuration settings (data, tracking, output, backends).
FLOW_OWN = {
    "data_dir", "preset", "backend", "config_file", "overrides", "verify_checksum",
    "tracking_uri", "register_model", "parallel_stage2", "reports_dir", "out_dir",
    "cache_stage1", "stage1_cache_dir", "federation_state_dir", "federation_schema", "min_sites",
}  # fmt: skip


def _cli_options() -> dict[str, Any]:
    """``fedcare run``'s options by dest."""
    parser = _parser("run")
    run = parser._subparsers._group_actions[0].choices["run"]  # type: ignore[union-attr]
    return {action.dest: action for action in run._actions}


def _flow_parameters() -> dict[str, inspect.Parameter]:
    return dict(inspect.signature(fedcare_pipeline.fn).parameters)


def _field_default(ref: SettingRef) -> Any:
    section = ExperimentConfig() if not ref.section else getattr(ExperimentConfig(), ref.section)
    return getattr(section, ref.name)


def test_the_cli_and_the_flow_offer_the_same_settings() -> None:
    cli = _cli_options()
    flow = _flow_parameters()
    for name, ref in FLAGGED.items():
        assert cli[name].option_strings == [f"--{ref.spec.flag}"], name
        assert cli[name].default is None, name  # the configuration's default stands
        flow_name = FLOW_NAMES.get(name, name)
        assert flow_name in flow, f"setting {ref.path} is a flag but no flow parameter"
        if name in GRID_SETTINGS:  # given always: the configuration's default
            default = flow[flow_name].default
            assert default == _field_default(ref), name
        else:
            assert flow[flow_name].default is None, name
    settings_in_flow = set(flow) - FLOW_OWN
    assert settings_in_flow == {FLOW_NAMES.get(n, n) for n in FLAGGED} | set(FLOWER)
    config_flags = {d for d in cli if d in FLAGGED}
    assert config_flags == set(FLAGGED)


@pytest.mark.parametrize("name", sorted(n for n in FLAGGED if FLAGGED[n].spec.range is not None))
def test_one_range_for_every_entry(name: str) -> None:
    ref = FLAGGED[name]
    limits = ref.spec.range
    assert limits is not None
    if limits.high is not None:
        bad: Any = limits.high + 1 if ref.base is int else limits.high * 2 + 1
    else:
        bad = (limits.low or 0) - 1
    if ref.base is int:
        bad = int(bad)
    words = limits.text()
    section, _, key = ref.path.rpartition(".")
    with pytest.raises(ConfigError, match="must") as from_config:
        ExperimentConfig().with_overrides(**({section: {key: bad}} if section else {key: bad}))
    args = _parser("run").parse_args(["run", f"--{ref.spec.flag}", str(bad)])
    with pytest.raises(ConfigError) as from_cli:
        build_config(args)
    flow_name = FLOW_NAMES.get(name, name)
    value = (bad,) if flow_name == "seeds" else bad
    with pytest.raises(ConfigError) as from_flow:
        FlowParameters.of(**{flow_name: value}).validate()
    for err in (from_config, from_cli, from_flow):
        assert words in str(err.value), (name, str(err.value))


def _other_value(ref: SettingRef) -> str:
    """A command-line word for a value of the setting's type other than its default."""
    default = _field_default(ref)
    if ref.base is bool:
        return "true"
    if ref.spec.choices:
        return next(c for c in ref.spec.choices if c != default)
    if ref.base is int:
        low = int(ref.spec.range.low or 0) if ref.spec.range else 0
        return str(low + 1 if default != low + 1 else low + 2)
    if ref.base is float:
        return "0.25"
    return "some/folder"


@pytest.mark.parametrize("name", sorted(n for n in FLAGGED if n not in GRID_SETTINGS))
def test_a_flag_and_the_flow_parameter_of_its_name_mean_the_same(name: str) -> None:
    ref = FLAGGED[name]
    word = _other_value(ref)
    argv = ["run", f"--{ref.spec.flag}"] + ([] if ref.base is bool else [word])
    value: Any = True if ref.base is bool else json.loads(word) if ref.base is not str else word
    from_cli = setting_values(_parser("run").parse_args(argv))
    from_flow = sections_of(FlowParameters.of(**{name: value}).settings)
    assert from_cli == from_flow, name
    section, _, key = ref.path.rpartition(".")
    assert from_cli[section][key] == value


@pytest.mark.parametrize("ref", [r for r in all_settings() if r.spec.flag is None], ids=str)
def test_every_other_setting_is_reached_by_set_and_overrides(ref: SettingRef) -> None:
    default = _field_default(ref)
    value = list(default) if isinstance(default, tuple) else default
    section, _, key = ref.path.rpartition(".")
    args = _parser("run").parse_args(["run", "--set", f"{ref.path}={json.dumps(value)}"])
    from_cli = build_config(args)
    overrides = {section: {key: value}} if section else {key: value}
    (from_flow,) = FlowParameters.of(overrides=overrides).experiment_configs()
    assert from_cli == from_flow == ExperimentConfig().validate()


def test_the_same_configuration_from_both_entries(tmp_path: Path) -> None:
    argv = [
        "run", "--clients", "4", "--rounds", "7", "--solver", "slsqp", "--split", "dirichlet",
        "--dp-noise-multiplier", "1.1", "--stage2-head-init", "global", "--secagg",
        "--set", "stage1.epsilon=1e-6",
    ]  # fmt: skip
    from_cli = build_config(_parser("run").parse_args(argv))
    (from_flow,) = FlowParameters.of(
        clients=4, rounds=7, solver="slsqp", split="dirichlet", dp_noise_multiplier=1.1,
        stage2_head_init="global", secagg=True, overrides={"stage1": {"epsilon": 1e-6}},
        backend="flower-sim",
    ).experiment_configs()  # fmt: skip
    assert from_cli == from_flow
    assert from_cli.stage2.solver == "slsqp"  # --solver sets both stages'


def test_a_bad_set_is_refused_naming_it() -> None:
    for item, words in (("nope", "SECTION.KEY=VALUE"), ("stage1.nope=1", "nope")):
        with pytest.raises(ConfigError, match=words):
            build_config(_parser("run").parse_args(["run", "--set", item]))


def test_federation_init_offers_what_the_schema_fixes() -> None:
    parser = _parser("federation")
    args = parser.parse_args(["federation", "init", "--dataset", "mimic3", "--out", "x.json"])
    given = vars(args)
    for name, ref in FLAGGED.items():
        assert (name in given) == ref.spec.in_schema, name
    with pytest.raises(SystemExit):
        parser.parse_args(["federation", "init", "--out", "x.json", "--clients", "3"])


def test_the_options_page_is_the_declarations() -> None:
    page = Path(__file__).resolve().parents[2] / "docs" / "OPTIONS.md"
    assert page.read_text(encoding="utf-8") == markdown(), (
        "docs/OPTIONS.md is stale: python -m fedcare.cli.options_doc > docs/OPTIONS.md"
    )


@pytest.mark.parametrize("dest", sorted(FLOWER))
def test_a_flower_option_is_a_flag_and_a_flow_parameter_with_one_meaning(dest: str) -> None:
    ref = FLOWER[dest]
    assert _cli_options()[dest].option_strings == [f"--{ref.spec.flag}"]
    assert _cli_options()[dest].default is None and _flow_parameters()[dest].default is None
    value: Any = {bool: True, float: 42.0, int: 2}.get(ref.base, "127.0.0.1")
    argv = ["run", "--backend", "flower-deployment", f"--{ref.spec.flag}"]
    argv += [] if ref.base is bool else [str(value)]
    from fedcare.cli.main import flower_overrides

    from_cli = flower_overrides(_parser("run").parse_args(argv))
    params = FlowParameters.of(backend="flower-deployment", **{dest: value}).validate()
    assert from_cli == dict(params.flower) == {ref.name: value}
    assert getattr(params.flower_options(), ref.name) == value
    assert isinstance(params.flower_options(), FlowerConfig)
    # With the in-process backend, both entries refuse it, naming it.
    local = ["run", f"--{ref.spec.flag}"] + ([] if ref.base is bool else [str(value)])
    with pytest.raises(ConfigError, match=f"--{ref.spec.flag} applies to"):
        build_stage1_runner(_parser("run").parse_args(local))
    with pytest.raises(ConfigError, match=f"{dest} applies to the Flower backends"):
        FlowParameters.of(**{dest: value}).validate()


@pytest.mark.parametrize("dest", sorted(d for d, r in FLOWER.items() if r.spec.range))
def test_a_flower_option_has_one_range_for_both_entries(dest: str) -> None:
    ref = FLOWER[dest]
    words = ref.spec.range.text() if ref.spec.range else ""
    args = _parser("run").parse_args(["run", "--backend", "flower-sim", f"--{ref.spec.flag}", "-1"])
    with pytest.raises(ConfigError) as from_cli:
        build_stage1_runner(args)
    with pytest.raises(ConfigError) as from_flow:
        FlowParameters.of(
            backend="flower-sim", **{dest: -1 if ref.base is int else -1.0}
        ).validate()
    assert str(from_cli.value).startswith(f"--{ref.spec.flag} ")
    assert str(from_flow.value).startswith(f"{dest} ")
    for err in (from_cli, from_flow):
        assert words in str(err.value), str(err.value)
