"""Stage 1 checkpoints: exact round trip, atomic replacement, clear errors, exact resume."""

import json
import os
import stat

import numpy as np
import pytest

import fedcare_core.resume.checkpoint as ckpt
from fedcare_core.config import (
    DataConfig,
    ExperimentConfig,
    ModelConfig,
    Stage1Config,
    Stage2Config,
)
from fedcare_core.data.clients import build_federation
from fedcare_core.errors import FedcareError
from fedcare_core.resume.checkpoint import (
    CheckpointedStage1,
    CheckpointError,
    decode_snapshot,
    encode_snapshot,
    load_checkpoint,
    save_checkpoint,
)
from fedcare_core.resume.run_folder import RunData, RunFolder
from fedcare_core.run.pipeline import run_experiment
from fedcare_core.stage1.loop import RoundInfo, ServerState, Stage1Snapshot, run_stage1
from tests.fedcare_core.synthetic import PARTITION, make_cohort

FP = "f" * 64


class Crash(Exception):
    """Stands for the process dying after a checkpoint was written."""


@pytest.fixture(scope="module")
def fed():
    return build_federation(make_cohort(240), PARTITION, DataConfig(clients=3), seed=0)


def _cfg(optimizer="sgd", rounds=5):
    return Stage1Config(rounds=rounds, batch_size=32, server_optimizer=optimizer)


def _snapshots(fed, cfg, seed=0):
    seen = []
    result = run_stage1(fed, ModelConfig(), cfg, seed, on_round=seen.append)
    return result, seen


def _same_result(a, b):
    np.testing.assert_array_equal(a.params, b.params)
    np.testing.assert_array_equal(a.buffers, b.buffers)
    assert a.rounds == b.rounds
    assert a.converged == b.converged


def _same_snapshot(a, b):
    assert (a.round, a.rounds, a.converged, a.state.step) == (
        b.round,
        b.rounds,
        b.converged,
        b.state.step,
    )
    for key in ("params", "buffers", "adam_m", "adam_v"):
        x, y = getattr(a.state, key), getattr(b.state, key)
        assert (x is None) == (y is None)
        if x is not None:
            assert x.dtype == y.dtype
            np.testing.assert_array_equal(x, y)


def _crash_after(monkeypatch, round_):
    real = ckpt.save_checkpoint

    def save(path, snapshot, fingerprint):
        real(path, snapshot, fingerprint)
        if snapshot.round == round_:
            raise Crash

    monkeypatch.setattr(ckpt, "save_checkpoint", save)


def test_the_round_callback_leaves_stage1_bit_identical(fed):
    plain = run_stage1(fed, ModelConfig(), _cfg(), seed=3)
    hooked, seen = _snapshots(fed, _cfg(), seed=3)
    _same_result(plain, hooked)
    assert [s.round for s in seen] == [1, 2, 3, 4, 5]
    assert seen[-1].rounds == tuple(plain.rounds)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_round_trip_is_exact(fed, optimizer, tmp_path):
    _, seen = _snapshots(fed, _cfg(optimizer, rounds=3))
    for snap in seen:
        back, fp = decode_snapshot(encode_snapshot(snap, FP), "x")
        assert fp == FP
        _same_snapshot(snap, back)
    if optimizer == "adam":
        assert seen[-1].state.adam_m is not None and seen[-1].state.step == 3
    # A plain numpy reader opens it without pickle.
    save_checkpoint(tmp_path / "c.npz", seen[-1], FP)
    with np.load(tmp_path / "c.npz", allow_pickle=False) as archive:
        assert "params" in archive.files and archive["meta"].dtype == np.uint8


def test_nan_and_missing_objectives_round_trip():
    info = RoundInfo(2, {}, float("nan"), {}, (0, 2), ("los",))
    snap = Stage1Snapshot(
        2, ServerState(np.ones(3, np.float32), np.zeros(0, np.float32)), (info, info), False
    )
    back, _ = decode_snapshot(encode_snapshot(snap, FP), "x")
    assert np.isnan(back.rounds[1].d_sq_norm)
    assert back.rounds[1].missing_objectives == ("los",)
    assert back.rounds[1].participants == (0, 2)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
@pytest.mark.parametrize("crash_round", [1, 3])
def test_resume_after_a_crash_equals_the_uninterrupted_run(
    fed, optimizer, crash_round, tmp_path, monkeypatch
):
    cfg = _cfg(optimizer)
    plain = run_stage1(fed, ModelConfig(), cfg, seed=1)
    path = tmp_path / "stage1.npz"
    with monkeypatch.context() as m:
        _crash_after(m, crash_round)
        with pytest.raises(Crash):
            CheckpointedStage1(path)(fed, ModelConfig(), cfg, 1, None)
    assert load_checkpoint(path).round == crash_round
    stale = tmp_path / ".stage1.npz.abc123.tmp"  # what a kill mid-write leaves
    stale.write_bytes(b"half a checkpoint")
    done = []
    said = []
    resumed = CheckpointedStage1(path, said.append)(
        fed, ModelConfig(), cfg, 1, lambda phase, t, total: done.append(t)
    )
    _same_result(plain, resumed)
    # Continued after the checkpoint: no round ran twice.
    assert done == list(range(crash_round + 1, cfg.rounds + 1))
    assert f"round {crash_round + 1} of 5" in said[0]
    assert load_checkpoint(path).round == cfg.rounds
    assert not stale.exists()


def test_a_complete_checkpoint_runs_no_more_rounds(fed, tmp_path):
    cfg = _cfg(rounds=2)
    path = tmp_path / "stage1.npz"
    first = CheckpointedStage1(path)(fed, ModelConfig(), cfg, 0, None)
    done = []
    again = CheckpointedStage1(path)(fed, ModelConfig(), cfg, 0, lambda *a: done.append(a))
    _same_result(first, again)
    assert done == []


def test_whole_document_resumed_in_process_equals_the_uninterrupted_one(tmp_path, monkeypatch):
    config = ExperimentConfig(
        data=DataConfig(clients=3),
        stage1=Stage1Config(rounds=4, batch_size=32),
        stage2=Stage2Config(epochs=2, batch_size=32),
    )
    cohort = make_cohort(300)
    plain = run_experiment(cohort, PARTITION, config).to_dict()
    path = tmp_path / "stage1.npz"
    with monkeypatch.context() as m:
        _crash_after(m, 2)
        with pytest.raises(Crash):
            run_experiment(cohort, PARTITION, config, stage1_runner=CheckpointedStage1(path))
    resumed = run_experiment(
        cohort, PARTITION, config, stage1_runner=CheckpointedStage1(path)
    ).to_dict()
    for doc in (plain, resumed):
        doc.pop("timing")
    assert json.dumps(resumed, sort_keys=True) == json.dumps(plain, sort_keys=True)


@pytest.mark.parametrize("fail", ["fsync", "replace"])
def test_a_crash_before_the_rename_leaves_the_previous_checkpoint(fed, tmp_path, monkeypatch, fail):
    _, seen = _snapshots(fed, _cfg(rounds=2))
    path = tmp_path / "stage1.npz"
    save_checkpoint(path, seen[0], FP)

    def die(*args):
        raise Crash

    with monkeypatch.context() as m:
        m.setattr(os, fail, die)
        with pytest.raises(Crash):
            save_checkpoint(path, seen[1], FP)
    _same_snapshot(load_checkpoint(path, FP), seen[0])
    assert [p.name for p in tmp_path.iterdir()] == ["stage1.npz"]


def test_checkpoint_is_owner_only(fed, tmp_path):
    _, seen = _snapshots(fed, _cfg(rounds=1))
    save_checkpoint(tmp_path / "c.npz", seen[0], FP)
    assert stat.S_IMODE((tmp_path / "c.npz").stat().st_mode) == 0o600


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty"])
def test_a_damaged_checkpoint_is_reported_clearly(fed, tmp_path, damage):
    _, seen = _snapshots(fed, _cfg(rounds=1))
    path = tmp_path / "c.npz"
    save_checkpoint(path, seen[0], FP)
    data = bytearray(path.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "flip":
        data[len(data) // 3] ^= 0xFF  # inside the params array
    else:
        data = bytearray()
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="truncated or corrupt"):
        load_checkpoint(path, FP)


def test_another_runs_checkpoint_is_refused(fed, tmp_path):
    path = tmp_path / "stage1.npz"
    CheckpointedStage1(path)(fed, ModelConfig(), _cfg(rounds=1), 0, None)
    with pytest.raises(CheckpointError, match="another run"):
        CheckpointedStage1(path)(fed, ModelConfig(), _cfg(rounds=1), 1, None)
    assert load_checkpoint(tmp_path / "none.npz") is None


def test_run_folder_is_owner_only_and_round_trips_its_config(tmp_path):
    folder = RunFolder.create(tmp_path / "run")
    assert stat.S_IMODE(folder.root.stat().st_mode) == 0o700
    config = ExperimentConfig(stage1=Stage1Config(rounds=7, server_optimizer="adam"))
    folder.write_config(config, RunData("/data/x.csv", False, "ab" * 32))
    assert stat.S_IMODE(folder.config_path.stat().st_mode) == 0o600
    again, data = RunFolder.open(folder.root).read_config()
    assert again == config
    assert data == RunData("/data/x.csv", False, "ab" * 32)
    assert not folder.is_complete()
    folder.write_results({"a": float("nan"), "b": [1.5]})
    assert folder.is_complete() and folder.read_results() == {"a": None, "b": [1.5]}
    assert stat.S_IMODE(folder.results_path.stat().st_mode) == 0o600


def test_a_run_folder_is_checked_without_being_made(tmp_path):
    assert RunFolder.check_new(tmp_path / "a" / "b") == tmp_path / "a" / "b"
    (tmp_path / "empty").mkdir()
    RunFolder.check_new(tmp_path / "empty")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]  # no probe left either
    (tmp_path / "empty" / "x").write_text("")
    with pytest.raises(FedcareError, match="not empty"):
        RunFolder.check_new(tmp_path / "empty")
    with pytest.raises(FedcareError, match=r"--run-dir .* not a folder"):
        RunFolder.check_new(tmp_path / "empty" / "x" / "run")
    with pytest.raises(FedcareError, match="not empty"):  # a file
        RunFolder.check_new(tmp_path / "empty" / "x")


def test_run_folder_refusals(tmp_path):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "x").write_text("")
    with pytest.raises(FedcareError, match="not empty"):
        RunFolder.create(tmp_path / "busy")
    with pytest.raises(FedcareError, match=r"no config\.json"):
        RunFolder.open(tmp_path / "busy")
    with pytest.raises(FedcareError, match="no such folder"):
        RunFolder.open(tmp_path / "absent")
    (tmp_path / "busy" / "config.json").write_text('{"format": "fedcare-run/1", "config": {}}')
    with pytest.raises(FedcareError, match="not a valid run configuration"):
        RunFolder.open(tmp_path / "busy").read_config()
    bad = {"format": "fedcare-run/1", "config": {"seed": 0, "threads": 0}, "data": {}}
    (tmp_path / "busy" / "config.json").write_text(json.dumps(bad))
    with pytest.raises(FedcareError, match="invalid configuration"):
        RunFolder.open(tmp_path / "busy").read_config()
