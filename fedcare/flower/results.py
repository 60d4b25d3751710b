"""How a ServerApp hands Stage 1's outcome back to the process that started the run.

The ServerApp may run in another process (a SuperLink's ``flwr-serverapp``), so it writes to its
result folder: ``rounds.jsonl`` (one line per finished round, read while the run is going to
report progress and time rounds), and at the end ``stage1.npz`` (``w*``: parameters and
BatchNorm statistics, no pickle) with ``stage1.json`` (convergence, notes, the rounds and, for
the DP accountant, ``dp_releases``: the Gaussian rounds released). Under differential privacy
every round carries the ε spent after it (``epsilon``; absent without DP). On failure it writes
``error.txt``. :func:`read_stage1_result` turns the folder back into the
core's :class:`~fedcare_core.stage1.loop.Stage1Result`.
"""

from __future__ import annotations

import io
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from fedcare.flower.run_plan import (
    ERROR_FILE,
    RESULT_ARRAYS_FILE,
    RESULT_FILE,
    ROUNDS_FILE,
    RunPlan,
)
from fedcare_core.files.atomic import write_atomic
from fedcare_core.files.json_lines import append_line, read_lines
from fedcare_core.nn.param_vectors import param_layout
from fedcare_core.stage1.loop import RoundInfo, ServerState, Stage1Result, build_model


def _num(x: float) -> float | None:
    return x if math.isfinite(x) else None


def round_to_dict(info: RoundInfo) -> dict[str, Any]:
    """A round as plain JSON data (NaN ‖d‖² of an empty round becomes null; ε only under DP)."""
    out: dict[str, Any] = {
        "round": info.round,
        "lambda": info.lambdas,
        "d_sq_norm": _num(info.d_sq_norm),
        "loss": info.losses,
        "participants": list(info.participants),
        "missing_objectives": list(info.missing_objectives),
    }
    if info.epsilon is not None:
        out["epsilon"] = info.epsilon
    return out


def round_from_dict(raw: dict[str, Any]) -> RoundInfo:
    """Inverse of :func:`round_to_dict`."""
    d_sq, epsilon = raw["d_sq_norm"], raw.get("epsilon")
    return RoundInfo(
        round=int(raw["round"]),
        lambdas={str(k): float(v) for k, v in raw["lambda"].items()},
        d_sq_norm=float("nan") if d_sq is None else float(d_sq),
        losses={str(k): float(v) for k, v in raw["loss"].items()},
        participants=tuple(int(c) for c in raw["participants"]),
        missing_objectives=tuple(raw["missing_objectives"]),
        epsilon=None if epsilon is None else float(epsilon),
    )


def append_round(result_dir: str | Path, info: RoundInfo, wall_s: float) -> None:
    """Append one finished round (with its wall time and finish timestamp) to the log."""
    line = round_to_dict(info) | {"wall_s": wall_s, "finished_at": time.time()}
    append_line(Path(result_dir) / ROUNDS_FILE, line)


def read_rounds(result_dir: str | Path) -> list[dict[str, Any]]:
    """Complete lines of the round log so far (a partly written last line is skipped)."""
    return read_lines(Path(result_dir) / ROUNDS_FILE)


def write_stage1_result(
    result_dir: str | Path,
    state: ServerState,
    rounds: list[RoundInfo],
    *,
    converged: bool,
    notes: list[str],
) -> None:
    """Write ``w*`` and the run summary; ``stage1.json`` appears last, atomically."""
    out = Path(result_dir)
    arrays = io.BytesIO()
    np.savez(arrays, params=state.params, buffers=state.buffers)
    write_atomic(out / RESULT_ARRAYS_FILE, arrays.getvalue())
    doc = {
        "converged": converged,
        "notes": notes,
        "dp_releases": state.dp_releases,
        "rounds": [round_to_dict(r) for r in rounds],
    }
    write_atomic(out / RESULT_FILE, (json.dumps(doc, indent=1) + "\n").encode())


def write_error(result_dir: str | Path, text: str) -> None:
    """Record why the ServerApp failed."""
    (Path(result_dir) / ERROR_FILE).write_text(text)


def read_error(result_dir: str | Path) -> str | None:
    """The ServerApp's failure text, if it wrote one."""
    path = Path(result_dir) / ERROR_FILE
    return path.read_text() if path.exists() else None


def result_ready(result_dir: str | Path) -> bool:
    """Whether the ServerApp has finished writing its result."""
    return (Path(result_dir) / RESULT_FILE).exists()


def read_dp_releases(result_dir: str | Path) -> int:
    """The Gaussian rounds a finished run released (its accountant's state; 0 without DP)."""
    doc = json.loads((Path(result_dir) / RESULT_FILE).read_text())
    return int(doc.get("dp_releases", 0))


def read_stage1_result(result_dir: str | Path, plan: RunPlan) -> Stage1Result:
    """The core's :class:`Stage1Result` from a finished result folder."""
    out = Path(result_dir)
    doc = json.loads((out / RESULT_FILE).read_text())
    with np.load(out / RESULT_ARRAYS_FILE, allow_pickle=False) as npz:
        params, buffers = npz["params"], npz["buffers"]
    model = build_model(plan.common_width, plan.objective_names, plan.model, plan.seed)
    return Stage1Result(
        params=params,
        buffers=buffers,
        rounds=[round_from_dict(r) for r in doc["rounds"]],
        converged=bool(doc["converged"]),
        objectives=plan.objective_names,
        layout=param_layout(model),
        notes=[str(n) for n in doc["notes"]],
    )
