"""The FedCARE ServerApp: runs :class:`~fedcare_flower.strategy.FedCareStrategy` on a Grid.

A plan for FedAvg or FedProx runs Flower's own strategies instead
(:func:`fedcare_flower.baselines.run_baseline_server`); FMGDA and FSMGDA are Algorithm 1 and
run on :class:`~fedcare_flower.strategy.FedCareStrategy` over the union layout.

It reads a :class:`~fedcare_flower.run_plan.RunPlan` (federation metadata and configuration; no
client data) and writes its outcome to the plan's result folder (see
:mod:`fedcare_flower.results`). ``app`` (the one a SuperLink loads) finds the plan through the
run config key ``plan-path``; the simulation passes the path directly to
:func:`build_server_app`.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from pathlib import Path

from flwr.app import Context
from flwr.serverapp import Grid, ServerApp

from fedcare_core.stage1 import RoundInfo
from fedcare_flower.baselines import FEDAVG_FAMILY, run_baseline_server
from fedcare_flower.results import append_round, write_error, write_stage1_result
from fedcare_flower.run_plan import RunPlan
from fedcare_flower.strategy import FedCareStrategy

#: Run-config key holding the plan's path (``[tool.flwr.app.config]`` of the generated app).
PLAN_PATH_KEY = "plan-path"


RoundHook = Callable[[RoundInfo, float], None]


def run_server(grid: Grid, plan: RunPlan, on_round: RoundHook | None = None) -> FedCareStrategy:
    """Run Stage 1 on ``grid`` and write the result folder; return the finished strategy.

    ``on_round(info, wall_s)`` is called after each round, once the round is on disk.
    """
    out = Path(plan.result_dir)

    def record(info: RoundInfo, wall_s: float) -> None:
        append_round(out, info, wall_s)
        if on_round is not None:
            on_round(info, wall_s)

    strategy = FedCareStrategy(plan, on_round=record)
    try:
        strategy.start(
            grid,
            strategy.initial_arrays(),
            num_rounds=plan.stage1.rounds,
            timeout=plan.round_timeout_s,
        )
        write_stage1_result(
            out,
            strategy.state,
            strategy.rounds,
            converged=strategy.converged,
            notes=strategy.notes,
        )
    except BaseException:
        write_error(out, traceback.format_exc())
        raise
    return strategy


def build_server_app(
    plan_path: str | Path | None = None, on_round: RoundHook | None = None
) -> ServerApp:
    """A ServerApp reading the plan at ``plan_path`` (default: the run config's ``plan-path``).

    ``on_round`` is only usable when the app runs in the caller's process (the simulation).
    """
    server_app = ServerApp()

    @server_app.main()
    def main(grid: Grid, context: Context) -> None:
        path = plan_path if plan_path is not None else str(context.run_config[PLAN_PATH_KEY])
        plan = RunPlan.read(path)
        if plan.algorithm in FEDAVG_FAMILY:
            run_baseline_server(grid, plan, on_round)
        else:
            run_server(grid, plan, on_round)

    return server_app


app = build_server_app()
