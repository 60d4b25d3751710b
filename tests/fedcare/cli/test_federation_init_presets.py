"""``federation init --preset``: its help offers what it takes; a preset it refuses is named."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedcare.cli.main import main
from fedcare.cli.run_options import FEDERATION_PRESET_FIXES
from fedcare_core.config import ExperimentConfig
from fedcare_core.config.presets import PRESETS, with_preset
from fedcare_core.sites.federation_rules import federation_conflicts


def _init(out: Path, *extra: str) -> int:
    return main(["federation", "init", "--dataset", "diabetes130", "--out", str(out), *extra])


def _help(capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as done:
        main(["federation", "init", "--help"])
    assert done.value.code == 0
    return " ".join(capsys.readouterr().out.split())


def test_the_help_states_the_fix_each_preset_needs_as_its_conflicts_say(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert set(FEDERATION_PRESET_FIXES) == set(PRESETS)
    text = _help(capsys)
    for name in PRESETS:
        conflicts = federation_conflicts(with_preset(ExperimentConfig(), name))
        assert FEDERATION_PRESET_FIXES[name] == " ".join(c.fix for c in conflicts)
        fix = FEDERATION_PRESET_FIXES[name]
        assert (f"{name} with {fix}" if fix else name) in text


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_the_help_offers_is_taken_with_its_fix(name: str, tmp_path: Path) -> None:
    fix = FEDERATION_PRESET_FIXES[name].split()
    assert _init(tmp_path / "federation.json", "--preset", name, *fix) == 0


@pytest.mark.parametrize("name", [p for p, fix in FEDERATION_PRESET_FIXES.items() if fix])
def test_a_preset_needing_a_flag_is_refused_naming_the_preset_and_the_flag(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "federation.json"
    assert _init(out, "--preset", name) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith(f"fedcare: error: --preset {name} sets data.scaling (--scaling) ")
    assert f"add {FEDERATION_PRESET_FIXES[name]} to start from {name} here" in error
    assert "\n" not in error and not out.exists()


def test_a_flag_the_user_gave_is_refused_as_the_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "federation.json"
    assert _init(out, "--preset", "recommended-admission", "--scaling", "federated") == 2
    error = capsys.readouterr().err
    assert "--preset" not in error and "data.scaling (--scaling) 'federated'" in error
    assert not out.exists()
