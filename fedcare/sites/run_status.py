"""What ``fedcare federation status`` shows of the coordinator's latest Stage 1 run.

Read from the run's folder under ``STATE/runs/`` alone (its plan and the ServerApp's round log
and result), so it works from another shell while ``federation run`` waits: the round reached
of T, the last round's λ*, ‖d‖² and ε, the sites that answered it and those that did not (the
stragglers). Nothing in it is patient-level: the coordinator never had any.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedcare.flower.results import read_error, read_rounds, result_ready

#: The plan file ``federation run`` writes in each run folder.
_PLAN_FILE = "plan.json"


@dataclass(frozen=True)
class RunStatus:
    """The state of one Stage 1 run over the sites.

    Parameters
    ----------
    name
        The run's name (its folder).
    state
        ``in progress``, ``finished`` or ``failed``.
    rounds_planned
        T.
    sites
        The sites of the run, in client-id order.
    rounds
        The round log's lines so far.
    """

    name: str
    state: str
    rounds_planned: int
    sites: tuple[str, ...]
    rounds: tuple[dict[str, Any], ...]

    def lines(self) -> list[str]:
        """The status as printed, one fact a line."""
        head = f"run {self.name}: {self.state}, round {len(self.rounds)} of {self.rounds_planned}"
        if not self.rounds:
            return [head, "  no round has ended yet"]
        last = self.rounds[-1]
        took_part = [self.sites[k] for k in last["participants"] if k < len(self.sites)]
        stragglers = [s for s in self.sites if s not in took_part]
        lambdas = ", ".join(f"{k} {v:.4f}" for k, v in last["lambda"].items())
        d_sq = last.get("d_sq_norm")
        out = [
            head,
            f"  round {last['round']}: λ* {lambdas or '-'}; ‖d‖² "
            + ("-" if d_sq is None else f"{d_sq:.4g}"),
            f"  answered: {', '.join(took_part) or '-'}; "
            f"stragglers: {', '.join(stragglers) or 'none'}",
        ]
        if last.get("epsilon") is not None:
            out.append(f"  ε spent: {last['epsilon']:.4g}")
        return out


@dataclass(frozen=True)
class UnreadableRun:
    """The latest run, whose plan cannot be read: said, not taken for "no run yet"."""

    name: str
    why: str

    def lines(self) -> list[str]:
        """The status as printed."""
        return [f"run {self.name}: its {_PLAN_FILE} cannot be read ({self.why})"]


def latest_run(runs_dir: Path) -> RunStatus | UnreadableRun | None:
    """The most recently started run in ``runs_dir`` (None: no run yet)."""
    if not runs_dir.is_dir():
        return None
    folders = [p for p in runs_dir.iterdir() if (p / _PLAN_FILE).is_file()]
    if not folders:
        return None
    folder = max(folders, key=lambda p: (p / _PLAN_FILE).stat().st_mtime)
    try:
        plan = json.loads((folder / _PLAN_FILE).read_text())
        planned, sites = int(plan["stage1"]["rounds"]), tuple(str(s) for s in plan["sites"])
    except OSError as exc:
        return UnreadableRun(folder.name, exc.strerror or type(exc).__name__)
    except ValueError as exc:
        return UnreadableRun(folder.name, f"not JSON: {str(exc).splitlines()[0]}")
    except (KeyError, TypeError) as exc:
        return UnreadableRun(folder.name, f"no stage1.rounds or sites: {exc!r}")
    result = folder / "result"
    state = "in progress"
    if result_ready(result):
        state = "finished"
    elif read_error(result) is not None:
        state = "failed"
    return RunStatus(folder.name, state, planned, sites, tuple(read_rounds(result)))
