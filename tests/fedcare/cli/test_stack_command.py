"""``fedcare stack``: the shell's exports that talk to the stack, and options refused by action."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedcare.cli.main import main


def test_stack_env_unset_undoes_where_the_shell_points(capsys):
    # After `fedcare stack down`, the shell must stop pointing at the stopped servers (a run
    # would otherwise try to log to them); the offline settings stay.
    assert main(["stack", "env", "--unset"]) == 0
    names = capsys.readouterr().out.split()
    assert names[0] == "unset"
    assert {"MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI", "PREFECT_API_URL"} <= set(names)
    assert "DO_NOT_TRACK" not in names


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["status", "--rounds", "3"], "--rounds: only fedcare stack schedule takes it, not status"),
        (
            ["up", "--cron", "0 2 * * 0", "--min-sites", "2"],
            "--cron, --min-sites: only fedcare stack schedule takes them, not up",
        ),
        (["down", "--unset"], "--unset: only fedcare stack env takes it, not down"),
        (["schedule", "--param", "seeds=1"], "--param: only fedcare stack run takes it"),
        (["env", "fedcare/full-experiment"], "DEPLOYMENT: only fedcare stack run takes it"),
        (["schedule", "--federation-state-dir", "s"], "needs --federation-schema"),
        (["schedule", "--min-sites", "2"], "go with --federation-state-dir"),
    ],
)
def test_an_option_of_another_action_is_refused_before_the_stack_is_touched(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # --state-dir points at an empty folder: nothing may start, stop or be written there
    assert main(["stack", *argv, "--state-dir", str(tmp_path / "stack")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "stack").exists()
