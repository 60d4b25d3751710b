"""flower-deployment: SuperLink and SuperNodes as real OS processes on loopback.

By default SuperNodes fork each ClientApp task from a warm SuperExec and poll every 0.5 s
(:mod:`fedcare.flower.warm_exec`, :mod:`fedcare.flower.supernode`); the equivalence test also
runs Flower's stock SuperNodes, which start a fresh ``flwr-clientapp`` interpreter per message
(about a minute more on two cores). The start-up tests stop the federation as soon as it is
launched and take seconds.
"""

import os
import signal
import socket

import numpy as np
import pytest

from fedcare.flower.deployment import DeploymentStage1Runner
from fedcare.flower.flower_options import FlowerConfig
from fedcare.flower.workspace import FlowerRunError
from fedcare.procs.children import TOKEN_ENV
from fedcare.procs.marked import marked_processes
from fedcare.procs.ports import LOOPBACK
from fedcare_core.config import Stage1Config
from fedcare_core.run.pipeline import prepare_federation
from fedcare_core.stage1.loop import run_stage1
from tests.fedcare.flower.conftest import small_config
from tests.fedcare.flower.test_workspace import client_files
from tests.fedcare_core.synthetic import PARTITION

LAMBDA_TOL = 1e-5
PARAM_TOL = 1e-4
#: The DP run: the server's noise is the in-process run's (the same seed), so λ* and w* differ
#: only by the clients' float32 rounding.
DP_TOL = 1e-9


def port_is_free(port: int) -> bool:
    """Whether ``port`` can be bound on loopback (nothing listening, nothing stale)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((LOOPBACK, port))
        except OSError:
            return False
    return True


def _assert_nothing_left(runner, tmp_path):
    assert runner.supervisor is not None
    assert marked_processes(TOKEN_ENV, runner.supervisor.token) == []
    assert all(p.poll() is not None for p in runner.supervisor.procs.values())
    assert runner.ports and all(port_is_free(p) for p in runner.ports)
    assert list(tmp_path.iterdir()) == []  # working folder, client data included, removed


@pytest.mark.slow
@pytest.mark.parametrize(
    "supernodes",
    [{}, {"client_exec": "subprocess", "node_poll_s": None}],
    ids=["warm", "stock"],
)
def test_deployment_matches_local_and_leaves_nothing_behind(small_federation, tmp_path, supernodes):
    cfg, fed = small_federation
    local = run_stage1(fed, cfg.model, cfg.stage1, cfg.seed)
    seen = []
    on_disk = []  # client data files found while the rounds run: none (memory files only)
    runner = DeploymentStage1Runner(FlowerConfig(workdir_parent=str(tmp_path), **supernodes))

    def progress(*a):
        seen.append(a)
        on_disk.extend(client_files(tmp_path))

    dep = runner(fed, cfg.model, cfg.stage1, cfg.seed, progress)
    assert seen == [("stage1", t, cfg.stage1.rounds) for t in (1, 2, 3)]
    assert on_disk == []
    for a, b in zip(local.rounds, dep.rounds, strict=True):
        for s in a.lambdas:
            assert b.lambdas[s] == pytest.approx(a.lambdas[s], abs=LAMBDA_TOL)
        assert b.participants == (0, 1, 2)
    np.testing.assert_allclose(dep.params, local.params, atol=PARAM_TOL)
    np.testing.assert_allclose(dep.buffers, local.buffers, atol=PARAM_TOL)
    assert dep.notes == []
    assert len(runner.timing.round_s) == 3 and runner.timing.startup_s > 0
    # each SuperNode was given its own client's folder and nothing else
    for k in range(3):
        argv = runner.supervisor.procs[f"supernode-{k}"].args
        assert argv[argv.index("--node-config") + 1].endswith(f"node-{k}.toml")
        assert runner.workspace.data_path(k).startswith(f"/proc/{os.getpid()}/fd/")
        warm = f"superexec-{k}" in runner.supervisor.procs
        assert warm == (not supernodes)
        assert ("--isolation" in argv) == warm
    _assert_nothing_left(runner, tmp_path)


@pytest.mark.slow
def test_a_seeded_dp_deployment_gives_the_in_process_lambdas_and_epsilon(
    small_federation, tmp_path
):
    from dataclasses import replace

    cfg, fed = small_federation
    stage1 = replace(cfg.stage1, dp_noise_multiplier=0.8, dp_clip=0.5, dp_noise_seed=5)
    cfg = replace(cfg, stage1=stage1).validate()
    local = run_stage1(fed, cfg.model, cfg.stage1, cfg.seed)
    runner = DeploymentStage1Runner(FlowerConfig(workdir_parent=str(tmp_path)))
    dep = runner(fed, cfg.model, cfg.stage1, cfg.seed, None)
    assert [r.epsilon for r in dep.rounds] == [r.epsilon for r in local.rounds]
    assert all(r.epsilon is not None for r in dep.rounds)
    for a, b in zip(local.rounds, dep.rounds, strict=True):
        assert a.lambdas.keys() == b.lambdas.keys() and b.participants == (0, 1, 2)
        for s in a.lambdas:
            assert b.lambdas[s] == pytest.approx(a.lambdas[s], rel=0.0, abs=DP_TOL)
    np.testing.assert_allclose(dep.params, local.params, rtol=0.0, atol=DP_TOL)
    np.testing.assert_allclose(dep.buffers, local.buffers, rtol=0.0, atol=DP_TOL)
    assert dep.notes == []
    _assert_nothing_left(runner, tmp_path)


@pytest.mark.slow
def test_killing_a_supernode_during_round_2_does_not_sink_the_run(small_cohort, tmp_path):
    cfg = small_config(rounds=5)
    fed = prepare_federation(small_cohort, PARTITION, cfg, None)
    flower = FlowerConfig(workdir_parent=str(tmp_path), round_timeout_s=60.0)
    killed = []

    def progress(stage, done, total):
        if done == 1:  # round 2's messages are out: kill client 1's SuperNode and its children
            proc = runner.supervisor.procs["supernode-1"]
            os.killpg(proc.pid, signal.SIGKILL)
            killed.append(proc.pid)

    runner = DeploymentStage1Runner(flower)
    result = runner(fed, cfg.model, cfg.stage1, cfg.seed, progress)
    assert killed
    assert [r.round for r in result.rounds] == [1, 2, 3, 4, 5]
    assert [r.participants for r in result.rounds] == [(0, 1, 2)] + [(0, 2)] * 4
    about1 = [n for n in result.notes if "client 1 " in n]
    # round 2 waits for it (timeout, or the SuperLink's "node unavailable" once its heartbeats
    # lapse), then it is dropped for good and the later rounds do not wait for it
    assert about1[0].startswith("round 2: client 1 ")
    assert any(" lost: " in n for n in about1)
    assert not any("client 0 " in n or "client 2 " in n for n in result.notes)
    only_client1 = set(fed.clients[1].objectives) - {
        s for c in fed.clients if c.client_id != 1 for s in c.objectives
    }
    for r in result.rounds[1:]:
        assert set(r.missing_objectives) == only_client1
        assert set(r.lambdas) == set(fed.objective_names) - only_client1
    _assert_nothing_left(runner, tmp_path)


def _tiny_federation(small_cohort):
    cfg = small_config(rounds=1)
    return cfg, prepare_federation(small_cohort, PARTITION, cfg, None)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_at_start_up_tears_every_process_down(small_cohort, tmp_path, sig):
    cfg, fed = _tiny_federation(small_cohort)
    runner = DeploymentStage1Runner(
        FlowerConfig(workdir_parent=str(tmp_path), shutdown_grace_s=3.0),
        on_started=lambda r: os.kill(os.getpid(), sig),
    )
    # SIGINT's handler is process-wide and an earlier test's library may have left its own (seen
    # once, under load, as "DID NOT RAISE"); the runner's signals_raise overrides it while it runs.
    with pytest.raises(KeyboardInterrupt):
        runner(fed, cfg.model, cfg.stage1, cfg.seed, None)
    nodes = {f"{kind}-{k}" for kind in ("supernode", "superexec") for k in range(3)}
    assert set(runner.supervisor.procs) == {"superlink", "flwr-run", *nodes}
    _assert_nothing_left(runner, tmp_path)
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_a_superlink_crash_is_an_error_and_cleans_up(small_cohort, tmp_path):
    cfg, fed = _tiny_federation(small_cohort)

    def crash(r):
        os.killpg(r.supervisor.procs["superlink"].pid, signal.SIGKILL)

    runner = DeploymentStage1Runner(
        FlowerConfig(workdir_parent=str(tmp_path), shutdown_grace_s=3.0), on_started=crash
    )
    with pytest.raises(FlowerRunError, match="superlink exited"):
        runner(fed, cfg.model, cfg.stage1, cfg.seed, None)
    _assert_nothing_left(runner, tmp_path)


def test_invalid_timeouts_are_configuration_errors():
    from fedcare_core.errors import ConfigError

    with pytest.raises(ConfigError, match="round_timeout_s"):
        FlowerConfig(round_timeout_s=0).validate()
    with pytest.raises(ConfigError, match="run_timeout_s"):
        DeploymentStage1Runner(FlowerConfig(run_timeout_s=-1))
    with pytest.raises(ConfigError, match="client_exec"):
        FlowerConfig(client_exec="thread").validate()
    with pytest.raises(ConfigError, match="node_poll_s"):
        FlowerConfig(node_poll_s=0).validate()
    assert Stage1Config().rounds == 100  # the runner does not change Stage 1's defaults


@pytest.mark.slow
@pytest.mark.realdata
def test_ctrl_c_on_the_cli_mid_run_leaves_no_process(data_dir, tmp_path):
    """``fedcare run --backend flower-deployment``, interrupted like a terminal's Ctrl-C."""
    import subprocess
    import sys
    import time
    import uuid

    mark = uuid.uuid4().hex
    env = {**os.environ, "FEDCARE_TEST_MARK": mark, "TMPDIR": str(tmp_path)}
    argv = [sys.executable, "-m", "fedcare.cli", "run", "--dataset", "diabetes130"]
    # Many rounds, though it is interrupted after the first: on a loaded machine a short run
    # could finish between two polls, and there would be nothing left to interrupt.
    argv += ["--data-dir", str(data_dir), "--clients", "3", "--rounds", "50"]
    argv += ["--max-patients", "1500", "--quiet", "--backend", "flower-deployment"]
    cli = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def marked(name=None):
        pids = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                environ = open(f"/proc/{entry}/environ", "rb").read().split(b"\0")
                cmd = open(f"/proc/{entry}/cmdline", "rb").read()
            except OSError:
                continue
            if f"FEDCARE_TEST_MARK={mark}".encode() in environ and int(entry) != cli.pid:
                if name is None or name.encode() in cmd:
                    pids.append(int(entry))
        return pids

    def rounds_done():
        logs = list(tmp_path.glob("fedcare-flwr-*/result/rounds.jsonl"))
        return sum(len(p.read_text().splitlines()) for p in logs)

    deadline = time.time() + 240
    while not rounds_done() and cli.poll() is None and time.time() < deadline:
        time.sleep(0.2)
    assert cli.poll() is None, cli.communicate()
    assert rounds_done() >= 1, "no round ever finished"
    assert marked("fedcare.flower.warm_exec"), "the SuperNodes' SuperExecs are not running"
    cli.send_signal(signal.SIGINT)
    _out, err = cli.communicate(timeout=120)
    assert cli.returncode == 130, err.decode()[-2000:]
    assert b"interrupted" in err
    time.sleep(0.5)
    assert marked() == [], [open(f"/proc/{p}/cmdline", "rb").read() for p in marked()]
    assert [p for p in tmp_path.iterdir() if p.name.startswith("fedcare-flwr-")] == []
