"""Who is in a Stage 1 run: the ``query`` handshake, site admission, departures and losses.

Both Stage 1 servers (:class:`~fedcare.flower.strategy.FedCareStrategy` on the Message API,
:class:`~fedcare.flower.secagg_strategy.SecureStage1Strategy` on the legacy SecAgg+ path) learn
which client each node serves the same way: a ``query`` handshake to every node not seen
before (all K before round 1, new nodes before later rounds). In a plain run a node's client id
is the one it claims; in a federation of sites (``RunPlan.sites``) it is the position of the
site the node names, and a node naming no site, a site not in the run, or a site prepared for
another schema is refused. In a federation of sites the handshake carries the run's terms, and
a site whose policy refuses them stops the run before round 1 (:class:`SiteRefused`, naming the
site and the rule), unless the refusal only awaits its operator's approval: then the site is
asked again until it approves or the start-up timeout passes. A node the SuperLink no longer
lists is dropped; if it reconnects it appears as a new node, answers the handshake and rejoins.
Every loss is logged and noted with the round and the client (:meth:`Membership.absence` says
why a client is missing when a round falls below the run's minimum). A node's error reply is
read with :func:`~fedcare.flower.site_errors.error_text`: no path of the site's is logged.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from flwr.app import Message, MessageType, RecordDict
from flwr.serverapp import Grid

from fedcare.flower.messages import ProtocolError, decode_identity, encode_query
from fedcare.flower.polling import PollingGrid
from fedcare.flower.run_plan import RunPlan
from fedcare.flower.site_errors import error_text
from fedcare.flower.site_messages import (
    SiteIdentity,
    add_run_terms,
    refusal_of,
    site_identity,
)
from fedcare.flower.site_rules import APPROVAL_RULE
from fedcare_core.sites.policy import Refusal

LOGGER = logging.getLogger(__name__)


class SiteRefused(RuntimeError):
    """A site's own policy refused the run (the message names the site and the rule)."""


#: Extra lifetime of an instruction beyond the round timeout, so a late node cannot act on it.
TTL_MARGIN_S = 30.0


@dataclass(frozen=True)
class ClientLoss:
    """A client that did not contribute to a round."""

    round: int
    client_id: int | None
    node_id: int
    reason: str
    dropped: bool
    #: How messages name the client (``site 'north'``); None: ``client <id>``.
    name: str | None = None

    def describe(self) -> str:
        """One line for logs and results."""
        who = f"client {self.client_id}" if self.client_id is not None else "unknown client"
        who = self.name or who
        what = "lost" if self.dropped else "skipped"
        return f"round {self.round}: {who} (node {self.node_id}) {what}: {self.reason}"


class Membership:
    """The nodes of a run and the client each serves.

    Parameters
    ----------
    plan
        The run's plan (K, the client ids, the sites and schema digest, timeouts).
    note
        Called with every line worth keeping in the run's notes (refusals, losses, absences).

    Attributes
    ----------
    clients
        Node id → client id, for the nodes still in the run.
    losses
        Every client that did not contribute to a round, in order.
    """

    def __init__(self, plan: RunPlan, note: Callable[[str], None]) -> None:
        self.plan = plan
        self._note = note
        self.clients: dict[int, int] = {}
        self.losses: list[ClientLoss] = []
        self._seen: set[int] = set()  # every node id ever handshaken or dropped
        self._awaiting: set[str] = set()  # sites whose operator has not approved the run yet

    def nodes_by_client(self) -> list[int]:
        """The nodes still in the run, in client-id order."""
        return sorted(self.clients, key=self.clients.__getitem__)

    def absence(self, client_id: int) -> str:
        """Why client ``client_id`` is not among a round's contributors, in a few words."""
        in_run = client_id in self.clients.values()
        name = self.plan.sites[client_id] if self.plan.sites else None
        if not in_run and name in self._awaiting:
            return "awaits its operator's approval"
        for loss in reversed(self.losses):
            if loss.client_id == client_id:
                return f"round {loss.round}: {loss.reason}"
        return "no reply" if in_run else "did not join"

    def drop_offline(self, server_round: int, online: Iterable[int]) -> None:
        """Drop the clients whose node the SuperLink no longer lists."""
        listed = set(online)
        for node in [n for n in self.clients if n not in listed]:
            self.lose(
                server_round, node, "left the federation (SuperLink: node offline)", dropped=True
            )

    def discover(self, grid: Grid, *, wait_for_all: bool) -> None:
        """Handshake with nodes not seen before, learning which client each serves.

        With ``wait_for_all`` it keeps polling until K clients are known or the start-up
        timeout expires (then proceeds with those present, noting the absent ones).
        """
        plan = self.plan
        deadline = time.time() + plan.startup_timeout_s
        while True:
            new = [n for n in grid.get_node_ids() if n not in self._seen]
            if new:
                ttl = plan.startup_timeout_s + TTL_MARGIN_S
                messages = [Message(self._query(), n, MessageType.QUERY, ttl=ttl) for n in new]
                remaining = max(deadline - time.time(), plan.pull_interval_s)
                wait = remaining if wait_for_all else plan.round_timeout_s
                self._register(grid, new, grid.send_and_receive(messages, timeout=wait))
            if not wait_for_all or len(self.clients) >= plan.num_clients:
                break
            if time.time() >= deadline:
                missing = [
                    plan.client_name(c)
                    for c in sorted(set(plan.client_ids) - set(self.clients.values()))
                ]
                self._note_and_log(
                    f"start-up: {len(self.clients)} of {plan.num_clients} clients joined "
                    f"within {plan.startup_timeout_s:g} s; absent: {', '.join(missing)}"
                )
                break
            time.sleep(max(plan.pull_interval_s, 0.2))

    def lose(self, server_round: int, node: int, reason: str, dropped: bool) -> None:
        """Record that ``node`` did not contribute to the round (``dropped``: out of the run)."""
        client_id = self.clients.get(node)
        name = None if client_id is None else self.plan.client_name(client_id)
        loss = ClientLoss(server_round, client_id, node, reason, dropped, name)
        if dropped:
            self.clients.pop(node, None)
            self._seen.add(node)
        self.losses.append(loss)
        self._note_and_log(loss.describe())

    def _note_and_log(self, line: str) -> None:
        self._note(line)
        LOGGER.warning(line)

    def _register(self, grid: Grid, asked: Sequence[int], replies: Iterable[Message]) -> None:
        answered: set[int] = set()
        for msg in replies:
            node = node_of(grid, msg)
            answered.add(node)
            self._seen.add(node)
            if msg.has_error():
                LOGGER.warning("handshake with node %d failed: %s", node, error_text(msg.error))
                continue
            try:
                claimed = decode_identity(msg.content)
                site = site_identity(msg.content)
            except ProtocolError as exc:
                LOGGER.warning("node %d sent a malformed handshake: %s", node, exc)
                continue
            refusal = refusal_of(msg.content)
            if refusal is not None:
                self._refused(node, site, refusal)
                continue
            client_id = claimed if not self.plan.sites else self._site_client(node, site)
            if client_id is None:
                continue
            if client_id in self.clients.values():
                raise ProtocolError(f"two nodes claim client {client_id}")
            if client_id not in self.plan.client_ids:
                raise ProtocolError(f"node {node} claims unknown client {client_id}")
            self.clients[node] = client_id
        for node in [n for n in asked if n not in answered]:
            # not marked seen: a node that is slow to start is asked again next time
            LOGGER.warning("node %d did not answer the handshake in time", node)

    def _query(self) -> RecordDict:
        """The handshake: with the run's terms when the clients are named sites."""
        content = encode_query()
        return add_run_terms(content, self.plan.terms()) if self.plan.sites else content

    def _refused(self, node: int, site: SiteIdentity | None, refusal: Refusal) -> None:
        """A site's policy refused the run: wait for its operator's approval, or stop.

        Raises
        ------
        SiteRefused
            Naming the site and the rule (any rule but the pending approval).
        """
        name = site.name if site is not None else f"node {node}"
        if refusal.rule != APPROVAL_RULE:
            raise SiteRefused(f"site {name!r} refused the run by its policy's rule "
                              f"{refusal.rule}: {refusal.reason}")  # fmt: skip
        if name not in self._awaiting:
            self._awaiting.add(name)
            self._note_and_log(f"site {name!r} awaits its operator's approval: {refusal.reason}")
        self._seen.discard(node)  # asked again at the next poll

    def _site_client(self, node: int, site: SiteIdentity | None) -> int | None:
        """The client id of the site a node names, or None (with a note) if it is refused.

        A node naming no site, a site that is not one of the run's, or a site prepared for
        another schema is refused (marked seen: it is not asked again). A second node naming
        a site already in the run (a site that reconnected before its old node was reported
        offline) is asked again at the next round.
        """
        plan = self.plan
        reason = None
        if site is None:
            reason = "names no site"
        elif site.name not in plan.sites:
            reason = f"names site {site.name!r}, which is not a site of this run"
        elif plan.schema_digest and site.schema_digest != plan.schema_digest:
            reason = f"site {site.name!r} was prepared for another federation schema"
        if reason is not None:
            self._note_and_log(f"node {node} refused: {reason}")
            return None
        assert site is not None
        client_id = plan.sites.index(site.name)
        if client_id in self.clients.values():
            LOGGER.warning("node %d: site %r is in the run already; asked again", node, site.name)
            self._seen.discard(node)
            return None
        return client_id


def node_of(grid: Grid | None, reply: Message) -> int:
    """The node a reply is about (the SuperLink's own error replies name only the message)."""
    if isinstance(grid, PollingGrid):
        return grid.node_of(reply)
    return reply.metadata.src_node_id
