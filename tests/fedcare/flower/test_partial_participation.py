"""k of n with a deadline: rounds close without a slow client, its late replies are discarded."""

from __future__ import annotations

import time

import numpy as np
import pytest
from flwr.app import Message, MessageType

from fedcare.flower.flower_options import FlowerConfig, check_quorum_for
from fedcare.flower.polling import PollingGrid, RoundQuorum
from fedcare.flower.server_app import run_server
from fedcare_core.errors import ConfigError
from tests.fedcare.flower.conftest import LoopbackGrid
from tests.fedcare.flower.test_strategy import _loopback

SLOW = 1001  # client 1's node


class SlowGrid(LoopbackGrid):
    """Client 1 trains, but its reply reaches the server only after the next push."""

    held: dict[str, Message]

    def push_messages(self, messages):
        self.replies.update(getattr(self, "held", {}))  # the previous round's, now late
        self.held = {}
        messages = list(messages)
        ids = super().push_messages(messages)
        for mid, msg in zip(ids, messages, strict=True):
            slow = msg.metadata.dst_node_id == SLOW
            if slow and msg.metadata.message_type == MessageType.TRAIN and mid in self.replies:
                self.held[mid] = self.replies.pop(mid)
        return ids


def _slow(small_federation, tmp_path, **plan):
    lb = _loopback(small_federation, tmp_path)
    lb.grid.__class__ = SlowGrid
    return lb.with_plan(**plan)


def test_a_round_closes_at_its_deadline_without_the_slow_client(
    small_federation, tmp_path, task_identity
):
    lb = _slow(small_federation, tmp_path, min_per_round=2, round_deadline_s=0.05)
    strategy = run_server(lb.grid, lb.plan)
    assert [r.participants for r in strategy.rounds] == [(0, 2), (0, 2), (0, 2)]
    late = [n for n in strategy.notes if "late reply" in n]
    assert late and all("client 1" in n and "discarded" in n for n in late)
    assert any("by the round's deadline" in x.reason for x in strategy.losses)
    assert not any(x.dropped for x in strategy.losses)  # slow, not gone: asked every round
    # The same answering clients give the same result as a run where client 1 never answers.
    silent = _loopback(
        small_federation,
        tmp_path,
        fail=lambda node, msg: (
            "silent" if node == SLOW and msg.metadata.message_type == MessageType.TRAIN else None
        ),
    ).with_plan(round_timeout_s=0.2)
    reference = run_server(silent.grid, silent.plan)
    np.testing.assert_array_equal(strategy.state.params, reference.state.params)
    assert [r.lambdas for r in strategy.rounds] == [r.lambdas for r in reference.rounds]


def test_fewer_than_k_replies_by_the_timeout_stop_stage1_without_aggregating(
    small_federation, tmp_path, task_identity
):
    lb = _slow(
        small_federation, tmp_path, min_per_round=3, round_deadline_s=0.05, round_timeout_s=0.3
    )
    strategy = run_server(lb.grid, lb.plan)
    assert strategy.rounds == []
    assert any("2 of the 3 clients needed" in n and "stopped" in n for n in strategy.notes)


class _Replies(LoopbackGrid):
    """Answers the nodes in ``fast`` at once; ``late`` after ``delay`` seconds; others never."""

    def __init__(self, fast, late=(), delay=0.0):
        super().__init__({})
        self.fast, self.late, self.delay, self.pushed_at = set(fast), set(late), delay, 0.0

    def push_messages(self, messages):
        self.pushed_at = time.time()
        ids = []
        for k, msg in enumerate(messages):
            mid = f"m{k}-{msg.metadata.dst_node_id}"
            msg.metadata.__dict__["_message_id"] = mid
            self.sent.append(msg)
            ids.append(mid)
        return ids

    def pull_messages(self, message_ids):
        out = []
        for mid in message_ids:
            node = int(mid.split("-")[1])
            ready = node in self.fast or (
                node in self.late and time.time() - self.pushed_at >= self.delay
            )
            if ready:
                msg = next(m for m in self.sent if m.metadata.message_id == mid)
                out.append(Message(msg.content, reply_to=msg))
        return out


def _messages(kind, nodes=(1, 2, 3)):
    from flwr.app import RecordDict

    return [Message(RecordDict(), node, kind, group_id="1") for node in nodes]


def test_the_grid_waits_for_everyone_until_the_deadline_then_for_k(task_identity):
    grid = _Replies(fast={1, 2}, late={3}, delay=0.3)
    polling = PollingGrid(grid, 0.01, RoundQuorum(k=2, deadline_s=0.1))
    started = time.time()
    replies = polling.send_and_receive(_messages(MessageType.TRAIN), timeout=5.0)
    assert len(replies) == 2 and 0.1 <= time.time() - started < 0.3
    # Past the deadline with fewer than k: it waits on, until k replied (here at 0.3 s).
    grid = _Replies(fast={1}, late={3}, delay=0.3)
    polling = PollingGrid(grid, 0.01, RoundQuorum(k=2, deadline_s=0.1))
    replies = polling.send_and_receive(_messages(MessageType.TRAIN), timeout=5.0)
    assert sorted(r.metadata.src_node_id for r in replies) == [1, 3]


def test_the_quorum_is_for_training_rounds_only(task_identity):
    grid = _Replies(fast={1, 2}, late={3}, delay=0.2)
    polling = PollingGrid(grid, 0.01, RoundQuorum(k=1, deadline_s=0.01))
    replies = polling.send_and_receive(_messages(MessageType.QUERY), timeout=5.0)
    assert len(replies) == 3  # a handshake, an evaluation or w*'s broadcast waits for all


def test_k_of_n_is_refused_where_it_cannot_be_honoured():
    FlowerConfig(min_per_round=2).validate()  # a minimum alone: no deadline, fewer stop
    FlowerConfig(round_deadline_s=2.0).validate()  # a deadline alone: k is a majority
    with pytest.raises(ConfigError, match="beyond round_timeout_s"):
        FlowerConfig(min_per_round=2, round_deadline_s=700.0).validate()
    with pytest.raises(ConfigError, match="min_per_round"):
        FlowerConfig(min_per_round=0, round_deadline_s=7.0).validate()
    names = ("--k", "--deadline")
    for args, message in (
        (((4, None), 3, None, False), "--k 4: more than the run's 3"),
        (((2, 5.0), 3, "FedAvg", False), "--k: partial .* not rounds run by Flower's FedAvg"),
        (((None, 5.0), 3, "FedXgbBagging", False), "--deadline: partial"),
        (((2, 5.0), 3, None, True), "--k with secagg"),
        (((None, 5.0), 3, None, True), "--deadline with secagg"),
    ):
        with pytest.raises(ConfigError, match=message):
            check_quorum_for(*args, names)
    check_quorum_for((3, 5.0), 3, None, False, names)
    check_quorum_for((None, None), 3, "FedAvg", True, names)


def test_a_deadline_alone_closes_rounds_with_a_majority(small_federation, tmp_path, task_identity):
    lb = _slow(small_federation, tmp_path, round_deadline_s=0.05)
    strategy = run_server(lb.grid, lb.plan)
    assert [r.participants for r in strategy.rounds] == [(0, 2), (0, 2), (0, 2)]
