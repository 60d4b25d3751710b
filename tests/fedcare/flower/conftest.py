"""Fixtures of the Flower-layer tests: a small synthetic federation and an in-process Grid."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable

import pytest
from flwr.app import Context, Message, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid

from fedcare_core.config import DataConfig, ExperimentConfig, Stage1Config, Stage2Config
from fedcare_core.run.pipeline import prepare_federation
from tests.fedcare_core.synthetic import PARTITION, make_cohort


@pytest.fixture(autouse=True)
def _no_telemetry(monkeypatch):
    monkeypatch.setenv("FLWR_TELEMETRY_ENABLED", "0")
    monkeypatch.setenv("FLWR_DISABLE_UPDATE_CHECK", "1")


@pytest.fixture(autouse=True)
def _torch_single_thread():
    """One intra-op thread, as in the federated client processes, and restore torch's state.

    On a busy 2-core machine, torch's default two threads make this small model's backward pass
    10-100x slower; the ClientApp also switches deterministic algorithms on process-wide.
    """
    import torch

    threads, deterministic = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(deterministic)


@pytest.fixture
def task_identity():
    """Messages can only be built inside a Flower task; pretend to be the ServerApp."""
    from flwr.supercore.task_identity import TaskIdentity

    saved = (TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id)
    TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = 7, 0, 1
    yield
    TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id = saved


def small_config(rounds: int = 3, clients: int = 3, seed: int = 0) -> ExperimentConfig:
    return ExperimentConfig(
        seed=seed,
        data=DataConfig(clients=clients),
        stage1=Stage1Config(rounds=rounds, batch_size=32),
        stage2=Stage2Config(epochs=2, batch_size=32, patience=2),
    ).validate()


@pytest.fixture(scope="session")
def small_cohort():
    return make_cohort(300)


@pytest.fixture
def small_federation(small_cohort):
    cfg = small_config()
    return cfg, prepare_federation(small_cohort, PARTITION, cfg, None)


class LoopbackGrid(Grid):
    """A Grid that hands each message straight to an in-process ClientApp.

    ``fail(node_id, message)`` decides per message: ``None`` (answer), ``"silent"`` (never
    answer, like a killed SuperNode) or ``"raise"`` (the ClientApp raises).
    """

    def __init__(
        self,
        apps: dict[int, tuple[ClientApp, Context]],
        fail: Callable[[int, Message], str | None] = lambda node, msg: None,
    ) -> None:
        self.apps = apps
        self.fail = fail
        self.replies: dict[str, Message] = {}
        self.sent: list[Message] = []
        self._ids = itertools.count(1)

    def set_run(self, run_id: int) -> None:  # pragma: no cover - not used
        raise NotImplementedError

    @property
    def run(self):  # pragma: no cover - not used
        raise NotImplementedError

    def create_message(self, *args, **kwargs):  # pragma: no cover - not used
        raise NotImplementedError

    def get_node_ids(self) -> Iterable[int]:
        return list(self.apps)

    def push_messages(self, messages: Iterable[Message]) -> Iterable[str]:
        from flwr.app import Error

        ids = []
        for msg in messages:
            mid = f"m{next(self._ids)}"
            msg.metadata.__dict__["_message_id"] = mid
            self.sent.append(msg)
            ids.append(mid)
            node = msg.metadata.dst_node_id
            mode = self.fail(node, msg)
            if mode == "silent" or node not in self.apps:
                continue
            if mode == "raise":
                reply = Message(Error(code=2, reason="ClientApp raised"), reply_to=msg)
            else:
                app, ctx = self.apps[node]
                reply = app(msg, ctx)
            self.replies[mid] = reply
        return ids

    def pull_messages(self, message_ids: Iterable[str]) -> Iterable[Message]:
        return [self.replies.pop(m) for m in list(message_ids) if m in self.replies]

    def send_and_receive(self, messages, *, timeout=None):  # pragma: no cover - not used
        raise NotImplementedError


def node_context(node_id: int, node_config: dict) -> Context:
    return Context(
        run_id=7, node_id=node_id, node_config=node_config, state=RecordDict(), run_config={}
    )
