"""Stage 1 under client-level DP over the Flower layer: the in-process loop's run, bit for bit.

The strategy drives real ClientApps through the in-process :class:`LoopbackGrid` (as in
``test_strategy.py``). With ``dp_noise_seed`` set the server's noise is reproducible, so the
Flower run must give :func:`~fedcare_core.stage1.loop.run_stage1`'s λ*, ε and ``w*`` exactly; what
leaves a client must be the clipped vectors only; a resumed run must continue ε from the
checkpoint's accountant state.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from fedcare.flower.results import read_dp_releases, read_rounds, read_stage1_result
from fedcare.flower.server_app import run_server
from fedcare_core.resume.checkpoint import load_checkpoint, save_checkpoint
from fedcare_core.resume.keys import stage1_fingerprint
from fedcare_core.stage1.loop import run_stage1
from tests.fedcare.flower.conftest import LoopbackGrid
from tests.fedcare.flower.test_strategy import _loopback
from tests.fedcare.flower.test_strategy_checkpoint import Killed, _kill_after

#: z and C small enough that clipping and noise both change every round.
NOISE, CLIP, NOISE_SEED = 0.8, 0.5, 11


def _dp_federation(small_federation, **stage1):
    cfg, fed = small_federation
    dp = dict(dp_noise_multiplier=NOISE, dp_clip=CLIP, dp_noise_seed=NOISE_SEED) | stage1
    return replace(cfg, stage1=replace(cfg.stage1, **dp)).validate(), fed


class RecordingGrid(LoopbackGrid):
    """A :class:`LoopbackGrid` that keeps every reply the server pulled."""

    received: list

    def pull_messages(self, message_ids):
        out = list(super().pull_messages(message_ids))
        self.received.extend(out)
        return out


def _recording(lb):
    lb.grid.__class__ = RecordingGrid
    lb.grid.received = []
    return lb


def test_a_seeded_dp_run_is_the_in_process_run_bit_for_bit(
    small_federation, tmp_path, task_identity
):
    cfg, fed = _dp_federation(small_federation)
    lb = _loopback((cfg, fed), tmp_path)
    strategy = run_server(lb.grid, lb.plan)
    local = run_stage1(fed, cfg.model, cfg.stage1, cfg.seed)
    assert [r.lambdas for r in strategy.rounds] == [r.lambdas for r in local.rounds]
    assert [r.d_sq_norm for r in strategy.rounds] == [r.d_sq_norm for r in local.rounds]
    assert [r.epsilon for r in strategy.rounds] == [r.epsilon for r in local.rounds]
    assert strategy.state.params.tobytes() == local.params.tobytes()
    assert strategy.state.buffers.tobytes() == local.buffers.tobytes()
    settings = cfg.stage1.privacy()
    assert settings is not None
    assert [r.epsilon for r in strategy.rounds] == [settings.epsilon_after(t) for t in (1, 2, 3)]
    assert strategy.state.dp_releases == 3
    assert all(r.losses == {} for r in strategy.rounds)  # the clients sent none
    # what the ServerApp hands back: ε per round, the accountant's state
    result = read_stage1_result(lb.ws.result_dir, lb.plan)
    assert [r.epsilon for r in result.rounds] == [r.epsilon for r in local.rounds]
    assert result.params.tobytes() == local.params.tobytes()
    assert read_dp_releases(lb.ws.result_dir) == 3
    assert [r["epsilon"] for r in read_rounds(lb.ws.result_dir)] == [
        r.epsilon for r in local.rounds
    ]


def test_the_noise_changes_the_run_and_an_unseeded_run_draws_its_own(
    small_federation, tmp_path, task_identity
):
    seeded = run_server(*_grid_and_plan(small_federation, tmp_path, "seeded"))
    other = run_server(*_grid_and_plan(small_federation, tmp_path, "other", dp_noise_seed=12))
    fresh = [
        run_server(*_grid_and_plan(small_federation, tmp_path, f"fresh{i}", dp_noise_seed=None))
        for i in range(2)
    ]
    params = [s.state.params.tobytes() for s in (seeded, other, *fresh)]
    assert len(set(params)) == 4
    # ε depends on z, δ and the rounds only, not on the noise drawn
    assert len({tuple(r.epsilon for r in s.rounds) for s in (seeded, other, *fresh)}) == 1


def _grid_and_plan(small_federation, tmp_path: Path, name: str, **stage1):
    (tmp_path / name).mkdir()
    lb = _loopback(_dp_federation(small_federation, **stage1), tmp_path / name)
    return lb.grid, lb.plan


def test_dp_clients_send_nothing_but_their_clipped_vectors(
    small_federation, tmp_path, task_identity
):
    cfg, fed = _dp_federation(small_federation)
    lb = _recording(_loopback((cfg, fed), tmp_path))
    run_server(lb.grid, lb.plan)
    handshakes = [m for m in lb.grid.received if m.metadata.message_type == "query"]
    replies = [m for m in lb.grid.received if m.metadata.message_type == "train"]
    assert len(handshakes) == 3 and len(replies) == 9
    for msg in handshakes:
        assert set(msg.content.metric_records["metrics"]) == {"client-id", "protocol"}
    for msg in replies:
        metrics = msg.content.metric_records["metrics"]
        arrays = msg.content.array_records["arrays"]
        assert metrics["num-examples"] == 0
        pursued = [s for s in fed.objective_names if arrays[f"delta.{s}"].numpy().size]
        client = fed.clients[int(metrics["client-id"])]
        assert pursued == [s for s in fed.objective_names if s in client.objectives]
        for s in fed.objective_names:
            assert metrics[f"num-examples.{s}"] == 0
            loss = metrics[f"loss.{s}"]
            assert math.isnan(loss) if s in pursued else loss == 0.0
        sent = [arrays[k].numpy().astype(np.float64) for k in arrays]
        assert math.sqrt(sum(float(v @ v) for v in sent)) <= CLIP  # jointly clipped
    # the server's noise seed never reaches a client
    for msg in lb.grid.sent:
        if msg.metadata.message_type == "train":
            stage1 = json.loads(msg.content.config_records["config"]["stage1-config"])
            assert stage1["dp_noise_seed"] is None
            assert stage1["dp_clip"] == CLIP and stage1["dp_noise_multiplier"] == NOISE


def _checkpointed(dp_federation, tmp_path: Path, name: str):
    (tmp_path / name).mkdir()
    lb = _loopback(dp_federation, tmp_path / name)
    fp = stage1_fingerprint(lb.fed, lb.cfg.model, lb.cfg.stage1, lb.cfg.seed)
    path = tmp_path / "run" / "stage1-checkpoint.npz"
    path.parent.mkdir(exist_ok=True, mode=0o700)
    return lb.with_plan(checkpoint_path=str(path), checkpoint_fingerprint=fp), path


def test_a_resumed_dp_run_continues_epsilon_from_the_checkpoint(
    small_federation, tmp_path, task_identity
):
    dp_fed = _dp_federation(small_federation)
    settings = dp_fed[0].stage1.privacy()
    assert settings is not None
    whole = run_server(*_grid_and_plan(small_federation, tmp_path, "whole"))
    lb, path = _checkpointed(dp_fed, tmp_path, "first")
    with pytest.raises(Killed):
        run_server(lb.grid, lb.plan, _kill_after(2))
    fingerprint = lb.plan.checkpoint_fingerprint
    snap = load_checkpoint(path, fingerprint)
    assert snap is not None and snap.round == 2 and snap.state.dp_releases == 2
    assert [r.epsilon for r in snap.rounds] == [settings.epsilon_after(t) for t in (1, 2)]

    again, _ = _checkpointed(dp_fed, tmp_path, "second")
    resumed = run_server(again.grid, again.plan)
    assert resumed.resumed_round == 2 and resumed.state.dp_releases == 3
    assert [r.epsilon for r in resumed.rounds] == [r.epsilon for r in whole.rounds]
    assert [r.lambdas for r in resumed.rounds] == [r.lambdas for r in whole.rounds]
    assert resumed.state.params.tobytes() == whole.state.params.tobytes()
    final = load_checkpoint(path, fingerprint)
    assert final is not None and final.state.dp_releases == 3
    assert read_dp_releases(again.ws.result_dir) == 3

    # ε continues from the accountant state the checkpoint holds, not from a count of rounds
    state = replace(snap.state, dp_releases=5)
    save_checkpoint(path, replace(snap, state=state), fingerprint)
    third, _ = _checkpointed(dp_fed, tmp_path, "third")
    continued = run_server(third.grid, third.plan)
    assert continued.state.dp_releases == 6
    assert continued.rounds[-1].epsilon == settings.epsilon_after(6)
