import json

import pytest

from fedcare_core.algorithms import baseline_algorithms, validate_config
from fedcare_core.config import (
    DataConfig,
    ExperimentConfig,
    Stage1Config,
)
from fedcare_core.config.method_options import baselines
from fedcare_core.errors import ConfigError
from fedcare_core.run.pipeline import run_experiment
from tests.fedcare_core.synthetic import PARTITION, make_cohort

FEDERATED = ("fedavg", "fedprox", "fmgda", "fsmgda", "pafnet", "fedxgb")
MGDA = ("fmgda", "fsmgda")


def _config(algorithm, seed=0):
    return ExperimentConfig(
        algorithm=algorithm,
        seed=seed,
        data=DataConfig(clients=4),
        stage1=Stage1Config(rounds=2, batch_size=32),
        baselines=baselines(batch_size=32, max_local_steps=4, bound_epochs=2),
    )


@pytest.fixture(scope="module")
def cohort():
    return make_cohort(240)


@pytest.mark.parametrize("algorithm", baseline_algorithms())
def test_every_baseline_runs_end_to_end_deterministically(cohort, algorithm):
    doc = run_experiment(cohort, PARTITION, _config(algorithm, seed=3)).to_dict()
    json.dumps(doc)
    assert doc["algorithm"] == algorithm
    assert doc["config"]["baselines"]["prox_mu"] == baselines().prox_mu
    assert doc["stage2"] == []
    assert set(doc["objectives"]) == {"early_discharge", "readmission", "los"}
    for name, rep in doc["objectives"].items():
        assert rep["metric"] == ("mae_days" if name == "los" else "auroc")
        assert rep["pooled"] is not None
        assert {c["client"] for c in rep["clients"]}
    if algorithm in FEDERATED:
        assert [r["round"] for r in doc["rounds"]] == [1, 2]
        for r in doc["rounds"]:
            assert r["loss"] and r["participants"] == [0, 1, 2, 3]
            assert bool(r["lambda"]) == (algorithm in MGDA)
            if algorithm in MGDA:
                assert sum(r["lambda"].values()) == pytest.approx(1.0)
    else:
        assert doc["rounds"] == []
    again = run_experiment(cohort, PARTITION, _config(algorithm, seed=3)).to_dict()
    for d in (doc, again):
        d.pop("timing")
    assert again == doc


def test_every_client_is_scored_on_its_own_test_rows(cohort):
    doc = run_experiment(cohort, PARTITION, _config("fedavg")).to_dict()
    n_test = {c["client"]: c["n_test"] for c in doc["clients"]}
    for rep in doc["objectives"].values():
        for c in rep["clients"]:
            assert c["n_test"] <= n_test[c["client"]]


def test_baseline_config_round_trips_and_old_documents_still_load():
    cfg = _config("fedprox").with_overrides(baselines={"prox_mu": 0.5, "optimizer": "sgd"})
    assert ExperimentConfig.from_dict(cfg.to_dict()) == cfg
    old = _config("fedcare").to_dict()
    assert "baselines" not in old  # FedCARE's documents are unchanged
    assert ExperimentConfig.from_dict(old).baselines == baselines()


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        ({"baselines": {"optimizer": "lbfgs"}}, "unknown baseline optimizer"),
        ({"baselines": {"prox_mu": -1.0}}, "prox_mu"),
        ({"baselines": {"pafnet_temperature": 0.0}}, "pafnet_temperature"),
        ({"algorithm": "fedsgd"}, "unknown algorithm"),
    ],
)
def test_invalid_baseline_options_raise(bad, match):
    with pytest.raises(ConfigError, match=match):
        validate_config(_config("fedavg").with_overrides(**bad))


@pytest.mark.parametrize(
    ("algorithm", "match"),
    [
        ("pafnet", "runs in process only .*PAFNet.s clients are stateful"),
        ("local", "runs in process only"),
        ("centralised", "runs in process only"),
        # FMGDA can run over a federated backend, but not over a Stage 1-only runner
        ("fmgda", "needs --backend local: this backend runs Stage 1 of fedcare/fedcare-b only"),
    ],
)
def test_a_stage1_backend_is_refused(cohort, algorithm, match):
    def backend(*args):  # pragma: no cover - must not be called
        raise AssertionError

    with pytest.raises(ConfigError, match=match):
        run_experiment(cohort, PARTITION, _config(algorithm), stage1_runner=backend)


def test_a_baseline_backend_runs_the_rounds_and_the_rest_stays_in_process(cohort):
    from fedcare_core.algorithms.base import BaselineBackend
    from fedcare_core.algorithms.fedavg.rounds import run_fedavg
    from fedcare_core.algorithms.union.features import union_federation

    calls = []

    class InProcessBackend:
        federated_baselines = ("fedavg",)

        def run_federated_baseline(self, algorithm, federation, layout, config, progress):
            calls.append((algorithm, layout.width))
            union = union_federation(federation)[0]
            return run_fedavg(
                union, config.model, config.baselines, config.stage1.rounds, config.seed
            )

    backend = InProcessBackend()
    assert isinstance(backend, BaselineBackend)
    config = _config("fedavg")
    got = run_experiment(cohort, PARTITION, config, stage1_runner=backend).to_dict()
    local = run_experiment(cohort, PARTITION, config).to_dict()
    got.pop("timing"), local.pop("timing")
    assert got == local
    assert [a for a, _ in calls] == ["fedavg"]
    with pytest.raises(ConfigError, match="fedcare/fedcare-b only"):
        run_experiment(cohort, PARTITION, _config("fedprox"), stage1_runner=backend)
