"""``fedcare stack run``: the watch's output passes through, and a watch that misses the end of
its flow run is stopped by the state poll (a stand-in for ``prefect deployment run --watch``;
the real one runs in ``tests/flows/test_deployment.py``)."""

from __future__ import annotations

import io
import sys
import time
from pathlib import Path

import pytest

from fedcare.stack.run import StateReader, run_deployment, watch_command
from fedcare.stack.settings import StackConfig

RUN_ID = "3f2b8f56-6c8f-4db8-95cb-0aa04d86b844"


def fake_watch(tail: str) -> list[str]:
    """A watch that prints Prefect's flow-run header, then runs ``tail`` (Python)."""
    header = f"print('Created flow run.'); print('└── UUID: {RUN_ID}', flush=True); "
    return [sys.executable, "-c", header + tail]


class States:
    """A state reader that answers ``answers`` in turn (the last one from then on)."""

    def __init__(self, *answers: str | None) -> None:
        self.answers = list(answers)
        self.asked: list[str] = []

    def __call__(self, flow_run_id: str) -> str | None:
        self.asked.append(flow_run_id)
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def run(
    tmp_path: Path, argv: list[str], states: StateReader, grace_s: float = 0.5
) -> tuple[int, str, list[str], float]:
    """Run :func:`run_deployment` with a stand-in watch; returns (status, output, said, seconds)."""
    out, said = io.StringIO(), []
    started = time.monotonic()
    rc = run_deployment(
        StackConfig(state=tmp_path / "stack"),
        "fedcare/full-experiment",
        [],
        out=out,
        say=said.append,
        read_state=states,
        argv=argv,
        poll_s=0.05,
        grace_s=grace_s,
    )
    return rc, out.getvalue(), said, time.monotonic() - started


def test_a_watch_that_misses_a_completed_run_is_stopped_with_success(tmp_path: Path) -> None:
    states = States("RUNNING", "RUNNING", "COMPLETED")
    rc, out, said, took = run(tmp_path, fake_watch("import time; time.sleep(20)"), states)
    assert rc == 0
    assert f"UUID: {RUN_ID}" in out
    assert states.asked and set(states.asked) == {RUN_ID}
    assert len(said) == 1 and "COMPLETED" in said[0] and "missed" in said[0]
    assert took < 10


def test_a_missed_failed_run_exits_non_zero(tmp_path: Path) -> None:
    rc, _, said, _ = run(tmp_path, fake_watch("import time; time.sleep(20)"), States("FAILED"))
    assert rc == 1
    assert "FAILED" in said[0]


def test_a_watch_that_ends_by_itself_keeps_its_exit_status(tmp_path: Path) -> None:
    # The watch sees the end itself (within the grace period): its status and output stand.
    tail = "import time; time.sleep(0.3); print('Flow run finished in state Failed.'); exit(1)"
    rc, out, said, _ = run(tmp_path, fake_watch(tail), States("FAILED"), grace_s=30.0)
    assert rc == 1
    assert out.splitlines()[-1] == "Flow run finished in state Failed."
    assert said == []


def test_an_unreachable_api_leaves_the_watch_in_charge(tmp_path: Path) -> None:
    def down(flow_run_id: str) -> str | None:
        raise ConnectionError("refused")

    rc, _, said, _ = run(
        tmp_path, fake_watch("import time; time.sleep(0.5); exit(0)"), down, grace_s=0.1
    )
    assert rc == 0 and said == []


def test_the_watch_command_is_prefects_own(tmp_path: Path) -> None:
    config = StackConfig(state=tmp_path / "stack")
    argv = watch_command(config, "fedcare/full-experiment", ["seeds=[1]", "rounds=5"])
    assert Path(argv[0]).name == "prefect"
    assert argv[1:] == [
        "deployment", "run", "fedcare/full-experiment", "--watch",
        "-p", "seeds=[1]", "-p", "rounds=5",
    ]  # fmt: skip


def test_the_cli_passes_deployment_and_parameters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import fedcare.stack.run as run_module
    from fedcare.cli.main import main

    calls: list[tuple[str, list[str], int]] = []

    def fake(config: StackConfig, deployment: str, params: list[str], **_: object) -> int:
        calls.append((deployment, list(params), config.prefect_port))
        return 3

    monkeypatch.setattr(run_module, "run_deployment", fake)
    argv = ["stack", "run", "fedcare/full-experiment", "-p", "seeds=[1]", "-p", "rounds=5"]
    assert main([*argv, "--state-dir", str(tmp_path), "--prefect-port", "4300"]) == 3
    assert calls == [("fedcare/full-experiment", ["seeds=[1]", "rounds=5"], 4300)]
    assert main(["stack", "run", "--state-dir", str(tmp_path)]) == 2
    assert "run needs a deployment" in capsys.readouterr().err


def test_a_failed_run_ends_with_the_reason_it_failed(tmp_path: Path) -> None:
    # Prefect's watch prints only "Failed"; the state's message names the data at fault.
    reason = States("/data/x.csv: data checks failed: raw: column 'age': 3 unexpected (rows 2, 5)")
    out, said = io.StringIO(), []
    rc = run_deployment(
        StackConfig(state=tmp_path / "stack"), "fedcare/full-experiment", [], out=out,
        say=said.append, read_state=States("FAILED"), read_failure=reason,
        argv=fake_watch("import sys; sys.exit(1)"), poll_s=0.05, grace_s=0.5,
    )  # fmt: skip
    assert rc == 1
    assert said == [f"flow run {RUN_ID} failed: {reason.answers[0]}"]


@pytest.mark.parametrize(
    ("message", "line"),
    [
        ("Flow run encountered an exception: SourceCheckError: f.csv: data checks failed: x",
         "f.csv: data checks failed: x"),
        ("Flow run encountered an exception: DataError: file f.csv, column age, rows 3, 7: bad\n"
         "Traceback …", "file f.csv, column age, rows 3, 7: bad"),
        ("Flow run was cancelled", "Flow run was cancelled"),
    ],
)  # fmt: skip
def test_the_reason_is_the_errors_own_line(message: str, line: str) -> None:
    from fedcare.stack.run import failure_line

    assert failure_line(message) == line
