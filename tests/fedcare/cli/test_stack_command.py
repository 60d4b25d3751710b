"""``fedcare stack env``: the shell's exports that talk to the stack, and their undoing."""

from __future__ import annotations

from fedcare.cli.main import main


def test_stack_env_unset_undoes_where_the_shell_points(capsys):
    # After `fedcare stack down`, the shell must stop pointing at the stopped servers (a run
    # would otherwise try to log to them); the offline settings stay.
    assert main(["stack", "env", "--unset"]) == 0
    names = capsys.readouterr().out.split()
    assert names[0] == "unset"
    assert {"MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI", "PREFECT_API_URL"} <= set(names)
    assert "DO_NOT_TRACK" not in names
