"""Contracts of the Flower seam, checked against the real installed flwr.

Every Flower internal :mod:`fedcare.flower.flwr_internals` relies on is exercised here: its
signature, the fields read, the module globals replaced and the call sites that read them, the
error code. A Flower upgrade that moves one fails here, not in a run. The fallback on an
unverified version is tested by pretending the installed flwr is 1.99.0.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.metadata
import inspect
import os
import time
import warnings
from types import ModuleType

import flwr
import pytest

from fedcare.flower import flwr_internals
from fedcare.flower.deployment import DeploymentStage1Runner, stock_if_unverified
from fedcare.flower.flower_options import FlowerConfig
from fedcare.flower.flwr_internals import (
    SUPERNODE_SLEEPS,
    VERIFIED_FLWR_VERSIONS,
    CappedSleep,
    FlowerInternalsError,
    TaskSpec,
    UnverifiedFlowerWarning,
)
from fedcare.flower.warm_exec import ForkExecutor
from fedcare.procs.children import executable


class _Stop(Exception):
    """Raised by a stub to leave a Flower loop once the observed call has happened."""


class _Clock:
    def __init__(self) -> None:
        self.slept: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


@pytest.fixture
def unverified(monkeypatch):
    """Pretend the installed flwr is a version the seam was not verified on."""
    monkeypatch.setattr(flwr_internals, "installed_flwr_version", lambda: "1.99.0")


def _flower_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, UnverifiedFlowerWarning)]


def _functions(module: ModuleType) -> dict[str, ast.FunctionDef]:
    tree = ast.parse(inspect.getsource(module))
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}


# ---- the version guard --------------------------------------------------------------------


def test_the_installed_flwr_is_a_verified_version():
    # A Flower upgrade stops here first: check the contracts below, then add the version.
    version = importlib.metadata.version("flwr")
    assert flwr_internals.installed_flwr_version() == version == flwr.__version__
    assert version in VERIFIED_FLWR_VERSIONS
    assert flwr_internals.is_verified()
    assert not flwr_internals.is_verified("1.99.0")


def test_on_the_verified_flwr_the_fast_paths_are_on_without_a_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        runner = DeploymentStage1Runner(FlowerConfig())
    assert _flower_warnings(caught) == []
    assert runner.flower.client_exec == "warm" and runner.flower.node_poll_s == 0.5
    assert runner.supernode_command()[1:3] == ["-m", "fedcare.flower.supernode"]


def test_on_an_unverified_flwr_deployment_runs_stock_supernodes_with_one_warning(unverified):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        runner = DeploymentStage1Runner(FlowerConfig(round_timeout_s=30.0))
    (message,) = _flower_warnings(caught)
    assert len(caught) == 1
    assert "flwr 1.99.0" in message and "1.42.0" in message and "stock" in message
    assert runner.flower == FlowerConfig(
        round_timeout_s=30.0, client_exec="subprocess", node_poll_s=None
    )
    assert runner.supernode_command() == [executable("flower-supernode")]


def test_asking_for_the_stock_supernodes_needs_no_warning(unverified):
    stock = FlowerConfig(client_exec="subprocess", node_poll_s=None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert stock_if_unverified(stock) is stock
    assert caught == []


def test_on_an_unverified_flwr_the_supernode_loop_is_left_alone(unverified, monkeypatch):
    import flwr.supernode.start_client_internal as loop

    monkeypatch.setattr(loop, "time", time)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert flwr_internals.cap_supernode_sleeps(0.25) is False
    assert loop.time is time
    assert len(_flower_warnings(caught)) == 1 == len(caught)


# ---- capped SuperNode polls: flwr.supernode.start_client_internal -------------------------


def test_the_supernode_loop_sleeps_only_through_its_time_global():
    import flwr.supernode.start_client_internal as loop

    assert loop.__name__ == flwr_internals.SUPERNODE_LOOP_MODULE
    assert loop.time is time  # the global the seam replaces
    tree = ast.parse(inspect.getsource(loop))
    for node in ast.walk(tree):  # no other handle on time.sleep that would bypass the cap
        if isinstance(node, ast.ImportFrom):
            assert node.module != "time", ast.unparse(node)
        if isinstance(node, ast.Import):
            assert all(a.name != "time" or a.asname is None for a in node.names)
    sleeps: dict[str, tuple[float, ...]] = {}
    for name, fn in _functions(loop).items():
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and "sleep" in ast.unparse(node.func):
                assert ast.unparse(node.func) == "time.sleep", ast.unparse(node)
                (arg,) = node.args
                assert isinstance(arg, ast.Constant), ast.unparse(node)
                sleeps[name] = (*sleeps.get(name, ()), arg.value)
    assert sleeps == SUPERNODE_SLEEPS
    for name in SUPERNODE_SLEEPS:  # the functions read the module's globals, patched or not
        assert getattr(loop, name).__globals__ is vars(loop)


def test_flower_supernode_runs_the_patched_loop():
    import flwr.supernode.start_client_internal as loop

    (entry,) = importlib.metadata.entry_points(group="console_scripts", name="flower-supernode")
    cli = inspect.getmodule(entry.load())
    assert cli is not None and cli.start_client_internal is loop.start_client_internal


def test_the_capped_sleep_is_what_the_reply_wait_calls(monkeypatch):
    import flwr.supernode.start_client_internal as loop

    monkeypatch.setattr(loop, "time", time)
    clock = _Clock()
    assert flwr_internals.cap_supernode_sleeps(0.25, clock=clock) is True
    assert isinstance(loop.time, CappedSleep) and loop.time.cap_s == 0.25

    class NoReplyYet:
        calls = 0

        def get_messages_legacy(self, is_reply: bool) -> list[object]:
            self.calls += 1
            if self.calls > 1:
                raise _Stop
            return []

    with pytest.raises(_Stop):
        loop._push_messages(state=NoReplyYet(), object_store=None, send=None, push_object=None)
    assert clock.slept == [0.25]  # Flower's 0.5 s reply wait, capped


# ---- warm SuperExec: run_superexec, the executor protocol, run_clientapp -------------------


def test_run_superexec_takes_the_arguments_the_seam_passes():
    from flwr.supercore.superexec.run_superexec import run_superexec

    params = inspect.signature(run_superexec).parameters
    for name in ("runtime_api_address", "insecure", "root_certificates_path", "parent_pid"):
        assert name in params
    bound = inspect.signature(run_superexec).bind(
        runtime_api_address="127.0.0.1:1", insecure=True, root_certificates_path=None, parent_pid=1
    )
    assert set(bound.arguments) == {
        "runtime_api_address",
        "insecure",
        "root_certificates_path",
        "parent_pid",
    }


def test_run_superexec_builds_its_executor_through_its_get_executor_global():
    import flwr.supercore.superexec.run_superexec as module

    assert callable(module.get_executor)
    calls = [
        node
        for node in ast.walk(_functions(module)["run_superexec"])
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "get_executor"
    ]
    assert len(calls) == 1


def test_run_superexec_runs_its_loop_on_the_executor_handed_to_it(monkeypatch):
    import flwr.supercore.superexec.run_superexec as module

    # Flower would install process-wide signal handlers; keep pytest's
    monkeypatch.setattr(module, "register_signal_handlers", lambda **kwargs: None)
    stock = module.get_executor

    class Spy:
        closed = False

        def reconcile(self) -> None:  # the loop's first call on its executor
            raise _Stop

        def close(self) -> None:
            self.closed = True

    spy = Spy()
    with pytest.raises(_Stop):
        flwr_internals.run_superexec_with(
            spy,
            runtime_api_address="127.0.0.1:1",
            insecure=True,
            root_certificates_path=None,
            parent_pid=None,
        )
    assert spy.closed  # Flower's loop closed the executor it was given
    assert module.get_executor is stock  # and the global is Flower's again


def test_fork_executor_implements_flowers_executor_protocol():
    from flwr.supercore.superexec.executor import Executor

    protocol = {n for n, v in vars(Executor).items() if callable(v) and not n.startswith("_")}
    assert protocol == {
        "get_eligible_capacity",
        "wait_for_capacity",
        "launch",
        "reconcile",
        "close",
    }
    for name in protocol:
        assert callable(getattr(ForkExecutor, name))
    for name in ("get_eligible_capacity", "launch"):
        flower = inspect.signature(getattr(Executor, name)).parameters
        ours = inspect.signature(getattr(ForkExecutor, name)).parameters
        assert [(p.name, p.kind) for p in flower.values()] == [
            (p.name, p.kind) for p in ours.values()
        ]


def test_execution_specs_carry_every_field_the_seam_reads():
    from flwr.supercore.superexec.executor import ExecutionSpec

    read = {n for n, v in vars(TaskSpec).items() if isinstance(v, property)}
    assert read == {
        "task_type",
        "runtime_api_address",
        "token",
        "insecure",
        "root_certificates_path",
        "runtime_dependency_install",
        "parent_pid",
    }
    assert read <= {f.name for f in dataclasses.fields(ExecutionSpec)}


def test_flowers_plugin_hands_the_fork_executor_a_clientapp_spec(monkeypatch):
    from flwr.proto.task_pb2 import Task
    from flwr.supercore.superexec.plugin import AutoExecPlugin

    class Recording(ForkExecutor):
        def __init__(self) -> None:
            super().__init__()
            self.specs: list[TaskSpec] = []

        def launch(self, spec: TaskSpec) -> object:
            self.specs.append(spec)
            return super().launch(spec)

    monkeypatch.setattr(os, "fork", lambda: 12345)  # the parent's side of a fork
    executor = Recording()
    plugin = AutoExecPlugin("127.0.0.1:1", True, None, executor=executor)
    result = plugin.launch_task(token="tok", task=Task(task_id=3, type="flwr-clientapp"))
    executor.children.clear()  # no such child to reap
    (spec,) = executor.specs
    assert flwr_internals.is_clientapp_task(spec)
    assert (spec.token, spec.runtime_api_address, spec.insecure) == ("tok", "127.0.0.1:1", True)
    assert result == flwr_internals.launch_accepted()
    assert str(result.status) == "accepted"


def test_other_task_types_are_not_clientapp_tasks():
    from flwr.supercore.constant import TaskType
    from flwr.supercore.superexec.executor import ExecutionSpec

    def spec(task_type: TaskType) -> ExecutionSpec:
        return ExecutionSpec(task_type, "127.0.0.1:1", "t", True, None, False, None, True, 1)

    assert flwr_internals.is_clientapp_task(spec(TaskType.CLIENT_APP))
    assert TaskType.CLIENT_APP == "flwr-clientapp"
    for other in set(TaskType) - {TaskType.CLIENT_APP}:
        assert not flwr_internals.is_clientapp_task(spec(other))


def test_accepted_launches_are_what_flowers_loop_accepts():
    from flwr.supercore.superexec.executor import LaunchResultStatus
    from flwr.supercore.superexec.run_superexec import _handle_launch_result

    result = flwr_internals.launch_accepted()
    assert result.status == LaunchResultStatus.ACCEPTED
    assert _handle_launch_result(result, task=None) is None  # returns before reading the task


def test_run_clientapp_takes_the_arguments_the_seam_passes():
    from flwr.supercore.tls import validate_and_resolve_root_certificates
    from flwr.supernode.runtime.run_clientapp import run_clientapp

    inspect.signature(run_clientapp).bind(
        runtime_api_address="127.0.0.1:1",
        token="t",
        insecure=True,
        certificates=None,
        parent_pid=None,
        runtime_dependency_install=False,
    )
    assert validate_and_resolve_root_certificates(None, True) is None
    flwr_internals.preload_clientapp_runtime()


def test_the_fallback_executor_is_flowers_subprocess_executor():
    from flwr.supercore.superexec.executor import SubprocessExecutor

    assert isinstance(flwr_internals.subprocess_executor(), SubprocessExecutor)


def test_flower_superexec_is_installed_for_the_unverified_fallback():
    assert importlib.metadata.entry_points(group="console_scripts", name="flower-superexec")


# ---- the error code of a node the SuperLink lost ------------------------------------------


def test_node_unavailable_is_the_code_of_the_superlinks_reply(task_identity):
    from flwr.app import Message, RecordDict
    from flwr.common.constant import ErrorCode
    from flwr.server.superlink.linkstate.utils import (
        create_message_error_unavailable_res_message,
    )

    code = flwr_internals.node_unavailable_error_code()
    assert code == ErrorCode.NODE_UNAVAILABLE
    instruction = Message(RecordDict(), 1001, "train", ttl=60.0)
    instruction.metadata.__dict__["_message_id"] = "m1"
    reply = create_message_error_unavailable_res_message(instruction.metadata, "node_unavail")
    assert reply.has_error() and reply.error.code == code
    assert reply.metadata.reply_to_message_id == "m1"
    assert reply.metadata.src_node_id != 1001  # the SuperLink's, hence PollingGrid.node_of


def test_a_flwr_without_the_code_is_a_clear_error(monkeypatch):
    import flwr.common.constant as constant

    monkeypatch.setattr(constant, "ErrorCode", type("ErrorCode", (), {}))
    with pytest.raises(FlowerInternalsError, match="NODE_UNAVAILABLE"):
        flwr_internals.node_unavailable_error_code()


def test_the_strategies_run_flowers_own_round_loop():
    from flwr.serverapp.strategy import FedAvg, Strategy

    from fedcare.flower.fedavg.strategy import UnionFedAvg, UnionFedProx
    from fedcare.flower.strategy import FedCareStrategy

    assert FedCareStrategy.start is Strategy.start
    assert UnionFedAvg.start is UnionFedProx.start is FedAvg.start is Strategy.start
    assert "_check_and_log_replies" not in inspect.getsource(UnionFedAvg)
