"""The ServerApp's Stage 1 checkpoints: written every round, restored to the same run.

The strategy drives real ClientApps through the in-process :class:`LoopbackGrid`; a run whose
round hook raises after round 2 stands for a ServerApp killed there. The resumed run must send
training messages for round 3 only, numbered 3 (the clients' random streams are seeded by the
round), and end bit for bit where the uninterrupted run ends.
"""

from __future__ import annotations

import stat
from dataclasses import replace
from pathlib import Path

import pytest

from fedcare.flower.results import read_stage1_result
from fedcare.flower.run_plan import CheckpointTarget
from fedcare.flower.runners import CheckpointedFlowerStage1, run_folder_runner
from fedcare.flower.server_app import run_server
from fedcare.flower.workspace import FlowerRunError
from fedcare_core.resume.checkpoint import CheckpointError, load_checkpoint
from fedcare_core.resume.keys import stage1_fingerprint
from fedcare_core.resume.run_folder import RunBackend
from tests.fedcare.flower.test_strategy import _loopback


class Killed(Exception):
    """Stands for the ServerApp's process dying after a round."""


def _kill_after(round_no: int):
    def hook(info, _wall_s):
        if info.round == round_no:
            raise Killed

    return hook


def _loopback_in(small_federation, tmp_path: Path, name: str):
    (tmp_path / name).mkdir()
    return _loopback(small_federation, tmp_path / name)


def _checkpointed(small_federation, tmp_path: Path, name: str):
    lb = _loopback_in(small_federation, tmp_path, name)
    fp = stage1_fingerprint(lb.fed, lb.cfg.model, lb.cfg.stage1, lb.cfg.seed)
    path = tmp_path / "run" / "stage1-checkpoint.npz"
    path.parent.mkdir(exist_ok=True, mode=0o700)
    return lb.with_plan(checkpoint_path=str(path), checkpoint_fingerprint=fp), path


def test_a_resumed_server_continues_the_killed_run_bit_for_bit(
    small_federation, tmp_path, task_identity
):
    plain = _loopback_in(small_federation, tmp_path, "whole")
    whole = run_server(plain.grid, plain.plan)
    lb, path = _checkpointed(small_federation, tmp_path, "first")
    with pytest.raises(Killed):
        run_server(lb.grid, lb.plan, _kill_after(2))
    snap = load_checkpoint(path, lb.plan.checkpoint_fingerprint)
    assert snap is not None and snap.round == 2 and len(snap.rounds) == 2
    assert stat.S_IMODE(path.stat().st_mode) == 0o600

    again, _ = _checkpointed(small_federation, tmp_path, "second")
    resumed = run_server(again.grid, again.plan)
    assert resumed.resumed_round == 2
    trained = [m for m in again.grid.sent if m.metadata.message_type == "train"]
    assert [m.metadata.group_id for m in trained] == ["3"] * 3  # round 3 only, numbered 3
    assert resumed.state.params.tobytes() == whole.state.params.tobytes()
    assert resumed.state.buffers.tobytes() == whole.state.buffers.tobytes()
    assert [r.lambdas for r in resumed.rounds] == [r.lambdas for r in whole.rounds]
    assert [r.d_sq_norm for r in resumed.rounds] == [r.d_sq_norm for r in whole.rounds]
    result = read_stage1_result(again.ws.result_dir, again.plan)
    assert [r.round for r in result.rounds] == [1, 2, 3]
    final = load_checkpoint(path, again.plan.checkpoint_fingerprint)
    assert final is not None and final.round == 3
    assert final.state.params.tobytes() == whole.state.params.tobytes()


def test_a_finished_checkpoint_sends_no_training_message(small_federation, tmp_path, task_identity):
    lb, _ = _checkpointed(small_federation, tmp_path, "first")
    first = run_server(lb.grid, lb.plan)
    again, _ = _checkpointed(small_federation, tmp_path, "second")
    resumed = run_server(again.grid, again.plan)
    assert again.grid.sent == []  # not even the handshake
    assert resumed.state.params.tobytes() == first.state.params.tobytes()
    assert [r.lambdas for r in resumed.rounds] == [r.lambdas for r in first.rounds]


def test_a_checkpoint_of_another_run_is_refused(small_federation, tmp_path, task_identity):
    lb, _ = _checkpointed(small_federation, tmp_path, "first")
    with pytest.raises(Killed):
        run_server(lb.grid, lb.plan, _kill_after(1))
    other = replace(lb.plan, checkpoint_fingerprint="0" * 64)
    with pytest.raises(CheckpointError, match="belongs to another run"):
        run_server(lb.grid, other)
    longer = replace(lb.plan, stage1=replace(lb.plan.stage1, rounds=0))
    with pytest.raises(CheckpointError, match="cannot continue this run"):
        run_server(lb.grid, longer)


class _FailingRunner:
    """A Flower runner whose SuperLink 'dies' after the ServerApp checkpointed round 1."""

    def __init__(self, small_federation, tmp_path: Path) -> None:
        self.small_federation, self.tmp_path = small_federation, tmp_path
        self.target: CheckpointTarget | None = None

    def __call__(self, federation, model_config, config, seed, progress, *, checkpoint=None):
        self.target = checkpoint
        lb = _loopback_in(self.small_federation, self.tmp_path, "server")
        plan = replace(
            lb.plan, checkpoint_path=checkpoint.path, checkpoint_fingerprint=checkpoint.fingerprint
        )
        with pytest.raises(Killed):
            run_server(lb.grid, plan, _kill_after(1))
        raise FlowerRunError("flower-superlink exited during the run")


def test_a_failed_flower_run_names_its_checkpoint_and_the_resume_command(
    small_federation, tmp_path, task_identity
):
    cfg, fed = small_federation
    folder = tmp_path / "run"
    folder.mkdir(mode=0o700)
    inner = _FailingRunner(small_federation, tmp_path)
    runner = run_folder_runner(inner, "fedcare", folder / "stage1-checkpoint.npz")
    assert isinstance(runner, CheckpointedFlowerStage1)
    with pytest.raises(FlowerRunError) as failed:
        runner(fed, cfg.model, cfg.stage1, cfg.seed, None)
    last = str(failed.value).splitlines()[-1]
    assert last == (
        f"the checkpoint of Stage 1 round 1 of 3 is kept in {folder.resolve()}: continue the "
        f"run with `fedcare run --resume {folder.resolve()}`"
    )
    assert inner.target is not None
    assert inner.target.fingerprint == stage1_fingerprint(fed, cfg.model, cfg.stage1, cfg.seed)
    # the federated baselines' rounds are not checkpointed: their runner is left as it is
    assert run_folder_runner(inner, "fedavg", folder / "x.npz") is inner


def test_a_resumed_run_gets_the_recorded_backend_and_options():
    from fedcare.cli.commands import build_parser as _parser
    from fedcare.cli.main import build_stage1_runner
    from fedcare.flower.deployment import DeploymentStage1Runner

    args = _parser().parse_args(["run", "--resume", "somewhere"])
    recorded = RunBackend("flower-deployment", {"client_exec": "subprocess", "node_poll_s": None})
    runner = build_stage1_runner(args, recorded)
    assert isinstance(runner, DeploymentStage1Runner)
    assert runner.flower.client_exec == "subprocess" and runner.flower.node_poll_s is None
    assert build_stage1_runner(args, RunBackend("local", {})) is None
