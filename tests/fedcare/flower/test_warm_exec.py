"""The warm SuperExec's executor: ClientApp tasks are forked, other task types are not.

The task specs are Flower's own ``ExecutionSpec`` objects (what ``run_superexec`` hands an
executor), so a field Flower renames or drops fails here, not in a deployment.
"""

import os
import signal
import time
import warnings

import pytest
from flwr.supercore.constant import TaskType
from flwr.supercore.superexec.executor import ExecutionSpec, LaunchResultStatus

from fedcare.flower import flwr_internals, warm_exec
from fedcare.flower.flwr_internals import UnverifiedFlowerWarning
from fedcare.flower.warm_exec import ForkExecutor


@pytest.fixture
def restore_signals():
    """The child body resets SIGINT/SIGTERM to their defaults; put pytest's back."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


def _spec(task_type: TaskType) -> ExecutionSpec:
    return ExecutionSpec(
        task_type=task_type,
        runtime_api_address="127.0.0.1:1",
        token="t",
        insecure=True,
        root_certificates_path=None,
        runtime_dependency_install=False,
        parent_pid=os.getpid(),
        suppress_output=True,
        task_id=1,
    )


def test_other_task_types_go_to_flowers_subprocess_executor(monkeypatch):
    from flwr.supercore.superexec.executor import SubprocessExecutor

    ex = ForkExecutor()
    assert isinstance(ex._fallback, SubprocessExecutor)
    launched = []
    monkeypatch.setattr(ex._fallback, "launch", lambda spec: launched.append(spec) or "ok")
    monkeypatch.setattr(os, "fork", lambda: pytest.fail("must not fork a ServerApp task"))
    spec = _spec(TaskType.SERVER_APP)
    assert ex.launch(spec) == "ok"
    assert launched == [spec] and ex.children == set()


def test_clientapp_tasks_run_in_forked_children_that_are_reaped(monkeypatch):
    # The child runs the (stubbed) task body and exits with its status; the parent reaps it.
    monkeypatch.setattr(warm_exec, "run_task", lambda spec: 0)
    ex = ForkExecutor()
    result = ex.launch(_spec(TaskType.CLIENT_APP))
    assert result.status == LaunchResultStatus.ACCEPTED
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
    types = {TaskType.CLIENT_APP, TaskType.SERVER_APP}
    assert ex.get_eligible_capacity(types) == (types, set())
    ex.wait_for_capacity(TaskType.CLIENT_APP)  # returns at once
    ex.close()


def test_the_child_body_is_flowers_clientapp_with_the_tasks_token(monkeypatch, restore_signals):
    import flwr.supernode.runtime.run_clientapp as module

    seen = []
    monkeypatch.setattr(module, "run_clientapp", lambda **kwargs: seen.append(kwargs))
    assert warm_exec.run_task(_spec(TaskType.CLIENT_APP)) == 0
    assert seen == [
        {
            "runtime_api_address": "127.0.0.1:1",
            "token": "t",
            "insecure": True,
            "certificates": None,
            "parent_pid": os.getpid(),
            "runtime_dependency_install": False,
        }
    ]


def test_the_childs_exit_status_is_the_tasks(monkeypatch, restore_signals, capsys):
    import flwr.supernode.runtime.run_clientapp as module

    def exits(**kwargs):
        raise SystemExit(3)

    def fails(**kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(module, "run_clientapp", exits)
    assert warm_exec.run_task(_spec(TaskType.CLIENT_APP)) == 3
    monkeypatch.setattr(module, "run_clientapp", fails)
    assert warm_exec.run_task(_spec(TaskType.CLIENT_APP)) == 1


def test_the_command_line_needs_a_transport_choice():
    with pytest.raises(SystemExit, match="insecure"):
        warm_exec.main(["--runtime-api-address", "127.0.0.1:1"])


def test_on_an_unverified_flwr_the_command_becomes_flowers_superexec(monkeypatch):
    monkeypatch.setattr(flwr_internals, "installed_flwr_version", lambda: "1.99.0")
    execs = []

    def execvp(path, argv):
        execs.append(argv)
        raise SystemExit(0)  # exec does not return

    monkeypatch.setattr(os, "execvp", execvp)
    monkeypatch.setattr(warm_exec, "warm_up", lambda data_path: pytest.fail("no warm-up"))
    argv = ["--runtime-api-address", "127.0.0.1:9", "--insecure", "--parent-pid", "42"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(SystemExit):
            warm_exec.main([*argv, "--data-path", "/nowhere"])
    ((command, *rest),) = execs
    assert os.path.basename(command) == "flower-superexec"
    assert rest == argv
    assert [w.category for w in caught] == [UnverifiedFlowerWarning]
    assert "flwr 1.99.0" in str(caught[0].message)
