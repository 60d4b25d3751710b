"""flower-sim against the in-process runner (Ray: tens of seconds, hence slow)."""

import logging

import numpy as np
import pytest
from flwr.common.logger import console_handler

from fedcare.flower.flower_options import FlowerConfig
from fedcare.flower.simulation import SimulationStage1Runner
from fedcare.procs.children import TOKEN_ENV
from fedcare.procs.marked import marked_processes
from fedcare_core.stage1.loop import run_stage1

pytestmark = pytest.mark.slow

#: λ* agree to this per round; w* parameters to PARAM_TOL (float32, different thread counts).
LAMBDA_TOL = 1e-5
PARAM_TOL = 1e-4
#: The DP run: the server's noise is the in-process run's (the same seed), so λ*, ‖d‖² and w*
#: differ only by the clients' float32 rounding.
DP_TOL = 1e-9


def test_simulation_matches_local_and_leaves_no_ray_process(
    small_federation, tmp_path, monkeypatch
):
    cfg, fed = small_federation
    local = run_stage1(fed, cfg.model, cfg.stage1, cfg.seed)
    seen, consoles = [], []
    monkeypatch.delenv("FLWR_LOG_LEVEL", raising=False)

    def progress(*args):
        seen.append(args)
        consoles.append((console_handler.level, console_handler.colored))  # during the rounds

    runner = SimulationStage1Runner(FlowerConfig(workdir_parent=str(tmp_path), sim_num_cpus=2))
    sim = runner(fed, cfg.model, cfg.stage1, cfg.seed, progress)
    assert seen == [("stage1", t, cfg.stage1.rounds) for t in (1, 2, 3)]
    # Flower's per-round INFO lines off the console, no colour codes where stderr is no terminal.
    colour = console_handler.stream.isatty()
    assert consoles == [(logging.WARNING, colour)] * 3
    assert len(sim.rounds) == len(local.rounds)
    for a, b in zip(local.rounds, sim.rounds, strict=True):
        assert a.lambdas.keys() == b.lambdas.keys()
        for s in a.lambdas:
            assert b.lambdas[s] == pytest.approx(a.lambdas[s], abs=LAMBDA_TOL)
        assert b.participants == (0, 1, 2)
    np.testing.assert_allclose(sim.params, local.params, atol=PARAM_TOL)
    assert sim.converged == local.converged and sim.notes == []
    assert runner.timing is not None and len(runner.timing.round_s) == 3
    assert marked_processes(TOKEN_ENV, runner.token) == []
    assert list(tmp_path.iterdir()) == []  # working folder (client data) removed


def test_a_seeded_dp_simulation_gives_the_in_process_lambdas_and_epsilon(
    small_federation, tmp_path
):
    from dataclasses import replace

    cfg, fed = small_federation
    stage1 = replace(cfg.stage1, dp_noise_multiplier=0.8, dp_clip=0.5, dp_noise_seed=3)
    cfg = replace(cfg, stage1=stage1).validate()
    local = run_stage1(fed, cfg.model, cfg.stage1, cfg.seed)
    runner = SimulationStage1Runner(FlowerConfig(workdir_parent=str(tmp_path), sim_num_cpus=2))
    sim = runner(fed, cfg.model, cfg.stage1, cfg.seed, None)
    settings = stage1.privacy()
    assert settings is not None
    assert [r.epsilon for r in sim.rounds] == [settings.epsilon_after(t) for t in (1, 2, 3)]
    assert [r.epsilon for r in sim.rounds] == [r.epsilon for r in local.rounds]
    assert [r.participants for r in sim.rounds] == [(0, 1, 2)] * 3
    for a, b in zip(local.rounds, sim.rounds, strict=True):
        assert a.lambdas.keys() == b.lambdas.keys()
        for s in a.lambdas:
            assert b.lambdas[s] == pytest.approx(a.lambdas[s], rel=0.0, abs=DP_TOL)
        assert b.d_sq_norm == pytest.approx(a.d_sq_norm, rel=DP_TOL)
    np.testing.assert_allclose(sim.params, local.params, rtol=0.0, atol=DP_TOL)
    np.testing.assert_allclose(sim.buffers, local.buffers, rtol=0.0, atol=DP_TOL)
    assert marked_processes(TOKEN_ENV, runner.token) == []
