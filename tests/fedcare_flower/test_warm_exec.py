"""The warm SuperExec's executor: ClientApp tasks are forked, other task types are not."""

import os
import time
from types import SimpleNamespace

import pytest

from fedcare_flower import warm_exec
from fedcare_flower.warm_exec import ForkExecutor


def _spec(task_type):
    return SimpleNamespace(
        task_type=task_type,
        runtime_api_address="127.0.0.1:1",
        token="t",
        insecure=True,
        root_certificates_path=None,
        runtime_dependency_install=False,
        parent_pid=os.getpid(),
    )


def test_other_task_types_go_to_flowers_subprocess_executor(monkeypatch):
    ex = ForkExecutor()
    launched = []
    monkeypatch.setattr(ex._fallback, "launch", lambda spec: launched.append(spec) or "ok")
    monkeypatch.setattr(os, "fork", lambda: pytest.fail("must not fork a ServerApp task"))
    assert ex.launch(_spec("flwr-serverapp")) == "ok"
    assert len(launched) == 1 and ex.children == set()


def test_clientapp_tasks_run_in_forked_children_that_are_reaped(monkeypatch):
    # The child runs the (stubbed) task body and exits with its status; the parent reaps it.
    monkeypatch.setattr(warm_exec, "_run_task", lambda spec: 0)
    ex = ForkExecutor()
    result = ex.launch(_spec("flwr-clientapp"))
    assert str(result.status) == "accepted"
    (pid,) = ex.children
    assert pid != os.getpid()
    deadline = time.monotonic() + 10
    while ex.children and time.monotonic() < deadline:
        ex.reconcile()
        time.sleep(0.01)
    assert ex.children == set()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # already reaped: no zombie left


def test_every_task_type_is_eligible_at_once():
    ex = ForkExecutor()
    types = {"flwr-clientapp", "flwr-serverapp"}
    assert ex.get_eligible_capacity(types) == (types, set())
    ex.wait_for_capacity("flwr-clientapp")  # returns at once
    ex.close()


def test_the_command_line_needs_a_transport_choice():
    with pytest.raises(SystemExit, match="insecure"):
        warm_exec.main(["--runtime-api-address", "127.0.0.1:1"])
