"""The federated baselines over Flower equal their in-process runs.

Fast tests run the real ServerApp code (Flower's FedAvg/FedProx subclassed for the core's
aggregation, or FedCARE's strategy for FMGDA/FSMGDA) and real ClientApps on an in-process
LoopbackGrid. The slow ones run Flower's Simulation Engine and a real SuperLink/SuperNodes.
Equivalence is checked on the whole results document (minus timings): byte-identical JSON.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from fedcare.flower.client_app import build_client_app, node_config_data_path
from fedcare.flower.fedavg.strategy import UnionFedAvg, UnionFedProx, make_strategy
from fedcare.flower.fedavg.wire import (
    DP_CLIP,
    PROXIMAL_MU,
    decode_local_update,
    encode_local_update,
    flower_strategy,
)
from fedcare.flower.flower_options import FlowerConfig
from fedcare.flower.messages import ProtocolError
from fedcare.flower.node_paths import DATA_PATH_KEY
from fedcare.flower.server_app import run_server
from fedcare.flower.workspace import (
    collect_result,
    prepare_baseline_workspace,
    remove_workspace,
)
from fedcare_core.algorithms import federated_baselines
from fedcare_core.algorithms.fedavg.rounds import LocalUpdate
from fedcare_core.config import ExperimentConfig
from fedcare_core.config.method_options import baselines
from fedcare_core.errors import ConfigError
from fedcare_core.privacy.accountants import epsilon_spent
from fedcare_core.run.pipeline import run_experiment
from tests.fedcare.flower.conftest import LoopbackGrid, node_context, small_config
from tests.fedcare_core.synthetic import PARTITION


def _config(algorithm: str, rounds: int = 3) -> ExperimentConfig:
    # Two local steps per round keep the run fast; μ large enough to move FedProx's weights.
    return small_config(rounds=rounds).with_overrides(
        algorithm=algorithm, baselines={"max_local_steps": 2, "prox_mu": 0.1}
    )


def _document(result: Any) -> str:
    doc = result.to_dict()
    doc.pop("timing")
    return json.dumps(doc, sort_keys=True)


class LoopbackBackend:
    """A BaselineBackend running the Flower apps on a LoopbackGrid (one process, no Ray)."""

    federated_baselines = federated_baselines()

    def __init__(self, workdir: str) -> None:
        self.flower = FlowerConfig(workdir_parent=workdir, pull_interval_s=0.01)
        self.grid: LoopbackGrid | None = None
        self.strategy: Any = None
        self.progress: list[tuple[str, int, int]] = []

    def run_federated_baseline(self, algorithm, federation, layout, config, progress):
        ws = prepare_baseline_workspace(algorithm, federation, layout, config, self.flower)
        try:
            app = build_client_app(node_config_data_path)
            self.grid = LoopbackGrid(
                {
                    100 + k: (app, node_context(100 + k, {DATA_PATH_KEY: str(ws.client_dir(k))}))
                    for k in range(len(federation.clients))
                }
            )
            rounds = ws.plan.stage1.rounds

            def on_round(info, _wall_s):
                self.progress.append(("stage1", info.round, rounds))
                if progress is not None:
                    progress("stage1", info.round, rounds)

            self.strategy = run_server(self.grid, ws.plan, on_round)
            return collect_result(ws, "loopback")
        finally:
            remove_workspace(ws, keep=False)


@pytest.mark.parametrize("algorithm", ["fedavg", "fedprox", "fsmgda", "fmgda"])
def test_flower_apps_give_the_in_process_results_document(
    small_cohort, tmp_path, task_identity, algorithm
):
    cfg = _config(algorithm)
    local = run_experiment(small_cohort, PARTITION, cfg)
    backend = LoopbackBackend(str(tmp_path))
    flower = run_experiment(small_cohort, PARTITION, cfg, stage1_runner=backend)
    assert _document(flower) == _document(local)
    assert backend.progress == [("stage1", t, 3) for t in (1, 2, 3)]
    assert list(tmp_path.iterdir()) == []  # per-client folders removed
    assert backend.grid is not None
    train = [m for m in backend.grid.sent if m.metadata.message_type == "train"]
    assert len(train) == 3 * 3  # K clients x T rounds
    if flower_strategy(algorithm) is not None:
        # Flower's own strategies: FedProx puts μ in the config, FedAvg sends none
        expected = UnionFedProx if algorithm == "fedprox" else UnionFedAvg
        assert type(backend.strategy) is expected
        mus = {m.content.config_records["config"].get(PROXIMAL_MU) for m in train}
        assert mus == ({0.1} if algorithm == "fedprox" else {None})
        assert flower.stage1.rounds[0].lambdas == {}
    else:
        assert set(flower.stage1.rounds[0].lambdas) == set(local.stage1.objectives)


@pytest.mark.parametrize("algorithm", ["fedavg", "fedprox", "fsmgda", "fmgda"])
def test_a_private_flower_run_is_the_in_process_one(
    small_cohort, tmp_path, task_identity, algorithm
):
    dp = {"dp_noise_multiplier": 1.1, "dp_noise_seed": 7, "dp_clip": 0.01}
    cfg = _config(algorithm).with_overrides(stage1=dp)
    local = run_experiment(small_cohort, PARTITION, cfg)
    backend = LoopbackBackend(str(tmp_path))
    flower = run_experiment(small_cohort, PARTITION, cfg, stage1_runner=backend)
    # Seeded noise: the same clipped changes, noise and ε on both paths, bit for bit.
    assert _document(flower) == _document(local)
    eps = [r.epsilon for r in flower.stage1.rounds]
    assert eps == [r.epsilon for r in local.stage1.rounds]
    assert eps == [epsilon_spent(1.1, t, 1e-5) for t in (1, 2, 3)]
    assert all(r.losses == {} for r in flower.stage1.rounds)
    assert backend.strategy.state.dp_releases == 3
    assert backend.grid is not None
    if flower_strategy(algorithm) is not None:
        train = [m for m in backend.grid.sent if m.metadata.message_type == "train"]
        assert {m.content.config_records["config"][DP_CLIP] for m in train} == {0.01}


def test_a_private_reply_carries_the_clipped_changes_and_no_counts_or_losses():
    update = LocalUpdate(
        3, np.full(4, 0.1, np.float32), np.full(2, 0.2, np.float32), 0, {"b": 0}, {}
    )
    content = encode_local_update(update, ("a", "b"), private=True)
    metrics = content.metric_records["metrics"]
    assert dict(metrics) == {"client-id": 3, "pursues.a": 0, "pursues.b": 1}
    back = decode_local_update(content, ("a", "b"), private=True)
    assert back.objective_examples == {"b": 0} and back.losses == {}
    np.testing.assert_array_equal(back.params, update.params)
    with pytest.raises(ProtocolError, match="pursues"):
        decode_local_update(encode_local_update(update, ("a", "b")), ("a", "b"), private=True)


def test_flower_strategies_are_flowers_fedavg_and_fedprox(tmp_path, small_federation):
    from flwr.serverapp.strategy import FedAvg, FedProx

    from fedcare_core.algorithms.union.features import union_layout

    cfg, fed = small_federation
    flower = FlowerConfig(workdir_parent=str(tmp_path))
    for algorithm, base in (("fedavg", FedAvg), ("fedprox", FedProx)):
        config = cfg.with_overrides(algorithm=algorithm)
        ws = prepare_baseline_workspace(algorithm, fed, union_layout(fed), config, flower)
        try:
            strategy = make_strategy(ws.plan)
        finally:
            remove_workspace(ws, keep=False)
        assert isinstance(strategy, base)
        # only aggregate_train (and bookkeeping in configure_train) is overridden
        assert type(strategy).start is base.start
        assert strategy.min_available_nodes == len(fed.clients)
        assert strategy.fraction_evaluate == 0.0
    assert make_strategy(ws.plan).proximal_mu == baselines().prox_mu  # type: ignore[attr-defined]


@pytest.mark.parametrize("algorithm", ["pafnet", "local", "centralised"])
def test_baselines_that_do_not_fit_flower_are_refused_with_the_reason(small_cohort, algorithm):
    from fedcare.flower.simulation import SimulationStage1Runner

    with pytest.raises(ConfigError, match="runs in process only") as info:
        run_experiment(
            small_cohort, PARTITION, _config(algorithm), stage1_runner=SimulationStage1Runner()
        )
    assert "fedavg, fedprox, fedxgb, fmgda, fsmgda" in str(info.value)
    if algorithm == "pafnet":
        assert "stateful" in str(info.value)


def test_a_stage1_only_runner_is_refused_for_a_baseline(small_cohort):
    def stage1_only(*args):  # pragma: no cover - must not be called
        raise AssertionError

    with pytest.raises(ConfigError, match="fedcare/fedcare-b only"):
        run_experiment(small_cohort, PARTITION, _config("fedavg"), stage1_runner=stage1_only)


# ---- real Flower runtimes (slow) ----------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["fedavg", "fedprox"])
def test_flower_sim_equals_in_process(small_cohort, tmp_path, algorithm):
    from fedcare.flower.simulation import SimulationStage1Runner
    from fedcare.procs.children import TOKEN_ENV
    from fedcare.procs.marked import marked_processes

    cfg = _config(algorithm)
    local = run_experiment(small_cohort, PARTITION, cfg)
    runner = SimulationStage1Runner(FlowerConfig(workdir_parent=str(tmp_path), sim_num_cpus=2))
    seen: list[tuple] = []
    sim = run_experiment(
        small_cohort, PARTITION, cfg, stage1_runner=runner, progress=lambda *a: seen.append(a)
    )
    assert _document(sim) == _document(local)
    assert seen == [("stage1", t, 3) for t in (1, 2, 3)]
    assert runner.timing is not None and len(runner.timing.round_s) == 3
    assert marked_processes(TOKEN_ENV, runner.token) == []
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_flower_deployment_fedprox_equals_in_process(small_cohort, tmp_path):
    from fedcare.flower.deployment import DeploymentStage1Runner
    from fedcare.procs.children import TOKEN_ENV
    from fedcare.procs.marked import marked_processes

    cfg = _config("fedprox")
    local = run_experiment(small_cohort, PARTITION, cfg)
    runner = DeploymentStage1Runner(FlowerConfig(workdir_parent=str(tmp_path)))
    dep = run_experiment(small_cohort, PARTITION, cfg, stage1_runner=runner)
    assert _document(dep) == _document(local)
    assert runner.timing is not None and len(runner.timing.round_s) == 3
    assert runner.supervisor is not None
    assert marked_processes(TOKEN_ENV, runner.supervisor.token) == []
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
# flower-sim only: on flower-deployment FedProx runs plainly above, and DP (the ServerApp in
# another process drawing the seeded noise) in test_deployment's DP run.
@pytest.mark.parametrize("runtime", ["flower-sim"])
def test_a_private_fedprox_on_a_real_flower_runtime_equals_in_process(
    small_cohort, tmp_path, runtime
):
    from fedcare.flower.deployment import DeploymentStage1Runner
    from fedcare.flower.simulation import SimulationStage1Runner

    dp = {"dp_noise_multiplier": 1.1, "dp_noise_seed": 7, "dp_clip": 0.01}
    cfg = _config("fedprox").with_overrides(stage1=dp)
    local = run_experiment(small_cohort, PARTITION, cfg)
    flower = FlowerConfig(workdir_parent=str(tmp_path), sim_num_cpus=2)
    runner = (
        SimulationStage1Runner(flower)
        if runtime == "flower-sim"
        else DeploymentStage1Runner(flower)
    )
    remote = run_experiment(small_cohort, PARTITION, cfg, stage1_runner=runner)
    # The ServerApp (another process under a SuperLink) draws the same seeded noise.
    assert _document(remote) == _document(local)
    eps = [r.epsilon for r in remote.stage1.rounds]
    assert eps == [epsilon_spent(1.1, t, 1e-5) for t in (1, 2, 3)]
    assert list(tmp_path.iterdir()) == []


def test_cli_refuses_pafnet_on_flower_before_loading_data(tmp_path, capsys):
    from fedcare.cli.main import main

    argv = ["run", "--algorithm", "pafnet", "--backend", "flower-sim", "--quiet"]
    code = main([*argv, "--dataset", "diabetes130", "--data-dir", str(tmp_path / "none")])
    assert code != 0
    err = capsys.readouterr().err
    assert "runs in process only" in err and "not found" not in err.lower()


@pytest.mark.parametrize("backend", ["flower-sim", "flower-deployment"])
def test_flow_parameters_accept_the_federated_baselines_on_flower(backend):
    from flows.flow_parameters import FlowParameters

    FlowParameters.of(algorithms=("fedcare", *federated_baselines()), backend=backend).validate()
    with pytest.raises(ConfigError, match="backend 'local'"):
        FlowParameters.of(algorithms=("fedavg", "centralised"), backend=backend).validate()
