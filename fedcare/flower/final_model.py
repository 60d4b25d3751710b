"""The end of Stage 1 at a coordinator: ``w*`` to every site still in the run (Algorithm 1, l. 30).

:func:`_broadcast_final_model` sends each site the final model with its client id, the seed and
the trace (:mod:`fedcare.flower.site_messages`). A site that does not answer (or fails) is
named in a note; the run still succeeds (``w*`` is in the coordinator's result, and the site
receives it with the next run).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

from flwr.app import Message, MessageType
from flwr.serverapp import Grid

from fedcare.flower.membership import TTL_MARGIN_S
from fedcare.flower.polling import PollingGrid
from fedcare.flower.results import round_to_dict, write_stage1_result
from fedcare.flower.run_plan import RunPlan
from fedcare.flower.site_errors import error_text
from fedcare.flower.site_messages import (
    FINAL_MODEL_ACTION,
    FinalModel,
    decode_stored,
    encode_final_model,
)
from fedcare_core.stage1.loop import RoundInfo, ServerState

LOGGER = logging.getLogger(__name__)
#: The message type of the final broadcast.
FINAL_MODEL_TYPE = f"{MessageType.QUERY}.{FINAL_MODEL_ACTION}"


class Stage1Outcome(Protocol):
    """What the result folder holds of a Stage 1 server (any strategy) once its rounds ended."""

    plan: RunPlan
    converged: bool
    notes: list[str]

    @property
    def state(self) -> ServerState: ...  # noqa: D102

    @property
    def rounds(self) -> Sequence[RoundInfo]: ...  # noqa: D102


class FinishedStage1(Stage1Outcome, Protocol):
    """What the broadcast reads of a FedCARE Stage 1 server (plain or secure) at its end."""

    @property
    def clients(self) -> dict[int, int]: ...  # noqa: D102


def _broadcast_final_model(strategy: FinishedStage1, grid: Grid) -> str | None:
    """Send ``w*`` to every client of ``strategy`` still in the run.

    Returns
    -------
    str or None
        A note naming the sites it did not reach (None: it reached every one).
    """
    plan = strategy.plan
    online = set(grid.get_node_ids())
    by_node = {
        node: client_id
        for node, client_id in sorted(strategy.clients.items(), key=lambda item: item[1])
        if node in online
    }
    if not by_node:
        return "final model: no client left to send it to"
    rounds = [round_to_dict(r) for r in strategy.rounds]
    state = strategy.state  # once: fedxgb's packs its trees on each access
    messages = []
    for node, client_id in by_node.items():
        final = FinalModel(
            client_id=client_id,
            seed=plan.seed,
            schema_digest=plan.schema_digest,
            objectives=plan.objective_names,
            common_width=plan.common_width,
            rounds=rounds,
            planned_rounds=plan.stage1.rounds,
            clients=len(plan.client_ids),
            converged=strategy.converged,
            run_name=plan.run_name,
            params=state.params,
            buffers=state.buffers,
        )
        ttl = plan.round_timeout_s + TTL_MARGIN_S
        messages.append(Message(encode_final_model(final), node, FINAL_MODEL_TYPE, ttl=ttl))
    replies = grid.send_and_receive(messages, timeout=plan.round_timeout_s)
    kept, failed = [], []
    answered = set()
    for reply in replies:
        node = grid.node_of(reply) if isinstance(grid, PollingGrid) else reply.metadata.src_node_id
        answered.add(node)
        name = plan.client_name(by_node[node]) if node in by_node else f"node {node}"
        if reply.has_error():
            failed.append(f"{name} ({error_text(reply.error)})")
        elif decode_stored(reply.content):
            kept.append(name)
    failed += [f"{plan.client_name(c)} (no reply)" for n, c in by_node.items() if n not in answered]
    note = f"final model: sent to {len(by_node)} client(s), kept in {len(kept)} site folder(s)"
    if not failed:
        LOGGER.info(note)
        return None
    note += f"; not delivered to {', '.join(failed)}"
    LOGGER.warning(note)
    return note


def finish_stage1(
    outcome: Stage1Outcome, grid: Grid, *, broadcast_from: FinishedStage1 | None
) -> None:
    """End Stage 1: broadcast ``w*``, then write the result folder (``stage1.json`` last).

    ``broadcast_from`` is the strategy whose sites get ``w*`` (None: send nothing). A site
    the broadcast missed is named in the outcome's notes (see
    :func:`_broadcast_final_model`).
    """
    if broadcast_from is not None:
        note = _broadcast_final_model(broadcast_from, grid)
        if note is not None:
            outcome.notes.append(note)
    write_stage1_result(
        outcome.plan.result_dir,
        outcome.state,
        list(outcome.rounds),
        converged=outcome.converged,
        notes=outcome.notes,
    )
