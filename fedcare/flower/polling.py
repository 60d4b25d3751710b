"""The one reply-polling loop of FedCARE's ServerApp: a Grid that waits with a short poll.

Flower's SuperLink grid waits for replies in ``send_and_receive`` with a fixed 3 s sleep between
pulls; a FedCARE round is one message per client with sub-second work, so that sleep would set
the pace. :class:`PollingGrid` wraps any :class:`~flwr.serverapp.Grid` (public API only) and
re-implements only ``send_and_receive``: push, then pull every ``interval`` seconds until every
message is answered or ``timeout`` passes. Both server strategies (FedCARE's Stage 1 and the
FedAvg/FedProx baselines) run Flower's own round loop on it.

It also remembers which node each pushed message went to (:attr:`PollingGrid.destinations`):
the SuperLink's own error replies (a node that missed its heartbeats, a reply that expired)
come from the SuperLink, not from the node, and only the instruction's id names the node.

Partial participation (:class:`RoundQuorum`, k of n with a deadline): a training round closes
when every client replied, or once its deadline has passed and at least k have, or at the
timeout. A reply that arrives after its round closed is pulled at a later wait, discarded and
reported (``on_late``), so it never enters another round's aggregate.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from flwr.app import Message, MessageType
from flwr.serverapp import Grid


@dataclass(frozen=True)
class RoundQuorum:
    """k of n with a deadline: a training round may close at ``deadline_s`` once ``k`` replied.

    Parameters
    ----------
    k
        Replies that let a round close at its deadline (before the deadline: all of them).
    deadline_s
        Seconds after a round's messages were sent at which it closes if ``k`` replied.
    """

    k: int
    deadline_s: float


#: Told of each late reply: its node and the round (message group) it answered.
LateHook = Callable[[int, str], None]
#: Told of every reply received (its node, the reply, whether it came late).
ReplyHook = Callable[[int, Message, bool], None]


class PollingGrid(Grid):
    """A Grid whose :meth:`send_and_receive` polls every ``interval`` seconds.

    Every other call is the wrapped grid's.

    Parameters
    ----------
    grid
        The grid Flower gave the ServerApp.
    interval
        Seconds between pulls while replies are outstanding.

    Attributes
    ----------
    destinations
        Message id → destination node of every message pushed through this grid.
    """

    def __init__(
        self,
        grid: Grid,
        interval: float,
        quorum: RoundQuorum | None = None,
        on_late: LateHook | None = None,
        on_reply: ReplyHook | None = None,
    ) -> None:
        if not interval > 0:
            raise ValueError(f"interval must be > 0, got {interval}")
        self.grid = grid
        self.interval = interval
        self.quorum = quorum
        self.on_late = on_late
        self.on_reply = on_reply
        self.destinations: dict[str, int] = {}
        self._closed: set[str] = set()  # ids of messages whose round closed without their reply

    def set_run(self, run: Any) -> None:
        """Delegated."""
        self.grid.set_run(run)

    @property
    def run(self) -> Any:
        """Delegated."""
        return self.grid.run

    def create_message(self, *args: Any, **kwargs: Any) -> Message:
        """Delegated."""
        return self.grid.create_message(*args, **kwargs)

    def get_node_ids(self) -> Iterable[int]:
        """Delegated."""
        return self.grid.get_node_ids()

    def get_nodes(self) -> Iterable[Any]:
        """Delegated."""
        return self.grid.get_nodes()

    def push_messages(self, messages: Iterable[Message]) -> Iterable[str]:
        """Delegated; each message's destination is kept in :attr:`destinations`."""
        messages = list(messages)
        ids = list(self.grid.push_messages(messages))
        for mid, msg in zip(ids, messages, strict=False):
            if mid:  # a grid returns None (or "") for a message it could not push
                self.destinations[mid] = msg.metadata.dst_node_id
        return ids

    def pull_messages(self, message_ids: Iterable[str]) -> Iterable[Message]:
        """Delegated."""
        return self.grid.pull_messages(message_ids)

    def node_of(self, reply: Message) -> int:
        """The node a reply is about: the destination of the message it answers."""
        meta = reply.metadata
        return self.destinations.get(meta.reply_to_message_id, meta.src_node_id)

    def send_and_receive(
        self, messages: Iterable[Message], *, timeout: float | None = None
    ) -> Iterable[Message]:
        """Push, then pull every ``interval`` s until all replied or ``timeout`` passed.

        Only replies to the messages pushed here are returned, each once. ``timeout=None``
        waits until every message is answered. With a :class:`RoundQuorum`, training messages
        also stop waiting once the deadline has passed and ``k`` of them were answered.
        """
        messages = list(messages)
        if not messages:
            return []
        self._discard_late()
        quorum = self.quorum if _all_training(messages) else None
        pending = {mid for mid in self.push_messages(messages) if mid}
        started = time.time()
        deadline = None if timeout is None else started + timeout
        replies: list[Message] = []
        while pending:
            for reply in self.pull_messages(pending):
                answered = reply.metadata.reply_to_message_id
                if answered in pending:
                    pending.discard(answered)
                    replies.append(reply)
                    if self.on_reply is not None:
                        self.on_reply(self.node_of(reply), reply, False)
            now = time.time()
            if not pending or (deadline is not None and now >= deadline):
                break
            if quorum and now - started >= quorum.deadline_s and len(replies) >= quorum.k:
                break
            time.sleep(self.interval)
        self._closed |= pending
        return replies

    def _discard_late(self) -> None:
        """Pull the replies to closed rounds that arrived since, and report each one."""
        if not self._closed:
            return
        for reply in self.pull_messages(set(self._closed)):
            answered = reply.metadata.reply_to_message_id
            if answered in self._closed:
                self._closed.discard(answered)
                if self.on_reply is not None:
                    self.on_reply(self.node_of(reply), reply, True)
                # An error reply is the SuperLink's (the instruction expired): nothing came late.
                if self.on_late is not None and not reply.has_error():
                    self.on_late(self.node_of(reply), reply.metadata.group_id)


def _all_training(messages: list[Message]) -> bool:
    return all(m.metadata.message_type == MessageType.TRAIN for m in messages)
