"""The FedCARE ServerApp: runs the plan's strategy with Flower's round loop on a polling Grid.

:func:`run_server` is the one server entry point: it picks
:class:`~fedcare.flower.strategy.FedCareStrategy` (FedCARE, FedCARE-B, and FMGDA/FSMGDA, which
are Algorithm 1 over the union layout) or, for FedAvg and FedProx, Flower's own strategies
(:func:`fedcare.flower.fedavg.strategy.make_strategy`), runs Flower's
:meth:`~flwr.serverapp.strategy.Strategy.start` on a
:class:`~fedcare.flower.polling.PollingGrid`, and writes the result folder.

It reads a :class:`~fedcare.flower.run_plan.RunPlan` (federation metadata and configuration; no
client data) and writes its outcome to the plan's result folder (see
:mod:`fedcare.flower.results`). ``app`` (the one a SuperLink loads) finds the plan through the
run config key ``plan-path``; the simulation passes the path directly to
:func:`build_server_app`.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeAlias

from flwr.app import ConfigRecord, Context, Message
from flwr.serverapp import Grid, ServerApp

from fedcare.flower.audit import RECEIVED_FILE, message_line
from fedcare.flower.federated_rounds import RoundHook, rounds_of_plan
from fedcare.flower.final_model import finish_stage1
from fedcare.flower.messages import ProtocolError
from fedcare.flower.polling import LateHook, PollingGrid, ReplyHook
from fedcare.flower.results import append_round, write_error
from fedcare.flower.run_plan import RunPlan
from fedcare.flower.site_messages import site_identity
from fedcare_core.files.json_lines import append_line
from fedcare_core.stage1.loop import RoundInfo

LOGGER = logging.getLogger(__name__)

#: Run-config key holding the plan's path (``[tool.flwr.app.config]`` of the generated app).
PLAN_PATH_KEY = "plan-path"


#: A strategy of a method's rounds (:meth:`FederatedRounds.strategy`): a Flower ``Strategy``
#: with FedCARE's hooks (``start``, ``initial_arrays``, ``rounds``, ``notes``, ``plan``).
_ServerStrategy: TypeAlias = Any


def make_strategy(plan: RunPlan, on_round: RoundHook | None = None) -> _ServerStrategy:
    """The strategy of the rounds the plan's algorithm runs (:mod:`.federated_rounds`)."""
    strategy: _ServerStrategy = rounds_of_plan(plan).strategy(plan, on_round)
    return strategy


def recorded_rounds(plan: RunPlan, on_round: RoundHook | None) -> RoundHook:
    """A round hook appending each round to the plan's result folder, then calling ``on_round``."""
    out = Path(plan.result_dir)

    def record(info: RoundInfo, wall_s: float) -> None:
        append_round(out, info, wall_s)
        if on_round is not None:
            on_round(info, wall_s)

    return record


@contextmanager
def errors_recorded(plan: RunPlan) -> Iterator[None]:
    """On any failure inside, write the traceback to the plan's result folder and re-raise."""
    try:
        yield
    except BaseException:
        write_error(plan.result_dir, traceback.format_exc())
        raise


def run_server(grid: Grid, plan: RunPlan, on_round: RoundHook | None = None) -> _ServerStrategy:
    """Run the plan's rounds on ``grid`` and write the result folder; return the strategy.

    ``on_round(info, wall_s)`` is called after each round, once the round is on disk. On any
    failure the traceback goes to the result folder's error file and the exception propagates.
    """
    with errors_recorded(plan):
        strategy = make_strategy(plan, on_round=recorded_rounds(plan, on_round))
        polling = PollingGrid(
            grid,
            plan.pull_interval_s,
            plan.round_quorum(),
            late_replies_noted(strategy, plan),
            replies_recorded(strategy, plan) if plan.sites else None,
        )
        strategy.start(
            polling,
            strategy.initial_arrays(),
            num_rounds=plan.stage1.rounds,
            timeout=plan.round_timeout_s,
            train_config=_train_config(strategy, plan),
        )
        sender = strategy if plan.broadcast and rounds_of_plan(plan).broadcasts else None
        finish_stage1(strategy, polling, broadcast_from=sender)
    return strategy


def late_replies_noted(strategy: _ServerStrategy, plan: RunPlan) -> LateHook:
    """A hook noting each reply that came after its round closed (and was discarded)."""

    def note(node: int, group: str) -> None:
        client = getattr(strategy, "clients", {}).get(node)  # FedAvg/FedProx: node ids only
        who = f"node {node}" if client is None else plan.client_name(client)
        when = f"round {group}" if group else "the start-up handshake"
        text = f"{when}: a late reply from {who} was discarded (its round had closed)"
        LOGGER.warning(text)
        strategy.notes.append(text)

    return note


def replies_recorded(strategy: object, plan: RunPlan) -> ReplyHook:
    """A hook appending each reply's audit line to the result folder's ``received.jsonl``.

    A reply's site is the plan's name of the client its node plays (``strategy.clients``,
    node id → client id, where the strategy keeps it), else the site a handshake names.
    """
    path = Path(plan.result_dir) / RECEIVED_FILE

    def record(node: int, reply: Message, late: bool) -> None:
        client = getattr(strategy, "clients", {}).get(node)
        site = plan.sites[client] if client is not None else _named_site(reply)
        append_line(path, message_line(reply, site=site, node=node, late=late))

    return record


def _named_site(reply: Message) -> str | None:
    """The site a handshake reply names (before the strategy knows the node), else None."""
    try:
        identity = None if reply.has_error() else site_identity(reply.content)
    except ProtocolError:
        return None
    return None if identity is None else identity.name


def _train_config(strategy: _ServerStrategy, plan: RunPlan) -> ConfigRecord | None:
    """The config every ``train`` message carries (None: the strategy builds its own)."""
    return rounds_of_plan(plan).train_config(strategy, plan)


_PlanServer = Callable[[Grid, Context, RunPlan, RoundHook | None], object]


def plan_server_app(
    serve: _PlanServer, plan_path: str | Path | None = None, on_round: RoundHook | None = None
) -> ServerApp:
    """A ServerApp calling ``serve`` on the plan at ``plan_path``.

    Without ``plan_path`` the plan is the run config's ``plan-path``. ``on_round`` is only
    usable when the app runs in the caller's process (the simulation).
    """
    server_app = ServerApp()

    @server_app.main()
    def main(grid: Grid, context: Context) -> None:
        path = plan_path if plan_path is not None else str(context.run_config[PLAN_PATH_KEY])
        serve(grid, context, RunPlan.read(path), on_round)

    return server_app


def build_server_app(
    plan_path: str | Path | None = None, on_round: RoundHook | None = None
) -> ServerApp:
    """A ServerApp running :func:`run_server` (see :func:`plan_server_app`)."""
    return plan_server_app(
        lambda grid, _context, plan, hook: run_server(grid, plan, hook), plan_path, on_round
    )


app = build_server_app()
