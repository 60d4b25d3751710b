"""``federation status``'s view of the latest run: the round reached, λ*, stragglers, ε."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fedcare.flower.results import append_round
from fedcare.sites.run_status import latest_run
from fedcare_core.stage1.loop import RoundInfo


def _run(runs: Path, name: str, rounds: int = 5) -> Path:
    folder = runs / name
    (folder / "result").mkdir(parents=True)
    plan = {"stage1": {"rounds": rounds}, "sites": ["north", "south", "east"]}
    (folder / "plan.json").write_text(json.dumps(plan))
    return folder


def _round(t: int, participants: tuple[int, ...], epsilon: float | None = None) -> RoundInfo:
    return RoundInfo(
        round=t, lambdas={"los": 0.25, "readmission": 0.75}, d_sq_norm=0.5 / t,
        losses={}, participants=participants, missing_objectives=(), epsilon=epsilon,
    )  # fmt: skip


def test_the_latest_run_shows_its_round_stragglers_and_epsilon(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    assert latest_run(runs) is None
    old = _run(runs, "earlier")
    (old / "result" / "stage1.json").write_text("{}")
    os.utime(old / "plan.json", (time.time() - 60, time.time() - 60))
    now = _run(runs, "today")
    status = latest_run(runs)
    assert status is not None and status.name == "today" and status.state == "in progress"
    assert status.lines()[1] == "  no round has ended yet"
    append_round(now / "result", _round(1, (0, 1, 2), 0.8), 1.0)
    append_round(now / "result", _round(2, (0, 2), 1.1), 1.0)
    text = "\n".join(latest_run(runs).lines())
    assert "run today: in progress, round 2 of 5" in text
    assert "λ* los 0.2500, readmission 0.7500; ‖d‖² 0.25" in text
    assert "answered: north, east; stragglers: south" in text
    assert "ε spent: 1.1" in text
    (now / "result" / "error.txt").write_text("Traceback …")
    assert latest_run(runs).state == "failed"


@pytest.mark.parametrize(
    ("plan", "said"),
    [("{not json", "not JSON"), ('{"sites": []}', "no stage1.rounds or sites")],
)
def test_a_latest_run_whose_plan_cannot_be_read_is_said_not_hidden(
    tmp_path: Path, plan: str, said: str
) -> None:
    runs = tmp_path / "runs"
    folder = _run(runs, "broken")
    (folder / "plan.json").write_text(plan)
    status = latest_run(runs)
    assert status is not None
    (line,) = status.lines()
    assert line.startswith("run broken: its plan.json cannot be read (") and said in line


def test_status_watch_prints_again_when_a_round_ends(tmp_path: Path) -> None:
    state = tmp_path / "STATE"
    folder = _run(state / "runs", "live", rounds=3)
    (state / "tls").mkdir()  # what `federation start` makes: a coordinator's folder to watch
    watch = subprocess.Popen(
        [sys.executable, "-m", "fedcare.cli", "federation", "status", "--state-dir", str(state),
         "--watch", "--interval", "0.2"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        seen = []
        for t in (1, 2):
            append_round(folder / "result", _round(t, (0, 1, 2)), 1.0)
            line = ""
            while f"round {t} of 3" not in line:
                line = watch.stdout.readline()
                assert line, "status --watch ended"
            seen.append(t)
        assert seen == [1, 2]
    finally:
        watch.terminate()
        watch.wait(timeout=30)
