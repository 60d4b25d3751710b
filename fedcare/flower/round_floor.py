"""No round aggregates fewer replies than the run's minimum (:meth:`RunPlan.round_floor`).

No run goes on without a client: one that no client joined, or a round that none answered,
stops (its result would be the untrained model). A federation of sites (``fedcare federation
run --min-sites N``, the Prefect flow's ``backend=federation``) needs N sites in every round
(``--min-sites-per-round K`` lowers that to K), and never aggregates one site's reply alone;
under secure aggregation or differential privacy no run does (the sum of one update is that
update). Every Stage 1 server strategy checks the floor where it aggregates replies (FedCARE's,
its SecAgg+ one, fedxgb's trees, FedAvg/FedProx's), and before it sends a round to fewer
clients than the floor. Below it the strategy raises :class:`TooFewSites`: nothing of that
round is aggregated, the ServerApp writes no result, and the run ends with one line naming
how many took part, the minimum, and each client missing with why (a refusal, an approval
awaited, an error reply, no reply within the round timeout, a node gone).
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from fedcare.flower.run_plan import RunPlan


class TooFewSites(RuntimeError):
    """Fewer clients took part in a round (or joined) than the run's minimum; Stage 1 ended.

    The message is one line: the round, how many of how many took part, who is missing and
    why, and what to do.
    """


def require_floor(
    plan: RunPlan,
    server_round: int | None,
    present: Collection[int],
    absence: Callable[[int], str],
    *,
    verb: str = "replied",
) -> None:
    """Raise :class:`TooFewSites` if fewer than the plan's floor of clients are ``present``.

    Parameters
    ----------
    plan
        The run's plan (its floor, its clients' names, its start-up timeout).
    server_round
        The round; None: the start-up (the wait for the clients before round 1).
    present
        The client ids that took part (at the start-up: that joined).
    absence
        Why a client that is not present is missing, in a few words.
    verb
        What the present ones did in the round (``"replied"``, ``"are in the run"``).
    """
    floor = plan.round_floor()
    present = set(present)
    if len(present) >= floor:
        return
    kind = "sites" if plan.min_sites is not None else "clients"
    missing = [c for c in plan.client_ids if c not in present]
    named = ", ".join(f"{plan.client_name(c)} ({absence(c)})" for c in missing) or "none"
    took = ", ".join(plan.client_name(c) for c in sorted(present))
    if server_round is None:
        where = f"start-up: {len(present)} of the {floor} {kind} needed joined within "
        where += f"{plan.startup_timeout_s:g} s"
    else:
        where = f"round {server_round}: {len(present)} of the {floor} {kind} needed {verb}"
    raise TooFewSites(
        where
        + (f" ({took})" if took else "")
        + f"; missing: {named}. Stage 1 stopped without aggregating "
        + ("any round" if server_round is None else f"round {server_round}")
        + "; no Stage 1 result was written. Start the run again once enough can take part"
    )
