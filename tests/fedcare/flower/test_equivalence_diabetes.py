"""The issue's acceptance test: local, flower-sim and flower-deployment agree on Diabetes 130.

K = 3 clients, T = 5 rounds, seed 0, the cohort subsampled to keep the run short. Tolerances:
λ* of every round within 1e-5 (absolute), every final metric (pooled, mean and std over clients,
per client) within 1e-4. The backends differ only in which process computes each client's
update, and in torch's intra-op thread count there (one thread in Ray actors and SuperNodes), so
differences are float32 rounding, not algorithmic.
"""

import math

import pytest

from fedcare.flower.flower_options import FlowerConfig
from fedcare.flower.runners import make_stage1_runner
from fedcare_core.config import (
    DataConfig,
    ExperimentConfig,
    Stage1Config,
    Stage2Config,
)
from fedcare_core.config.backends import backend_names
from fedcare_core.data.loading import load_dataset
from fedcare_core.run.pipeline import run_experiment

BACKENDS = backend_names()
LAMBDA_TOL = 1e-5
METRIC_TOL = 1e-4


def _close(a, b, tol):
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=0.0, abs_tol=tol)


@pytest.mark.slow
@pytest.mark.realdata
def test_local_sim_and_deployment_agree_on_diabetes130(data_dir, tmp_path):
    config = ExperimentConfig(
        seed=0,
        data=DataConfig(dataset="diabetes130", clients=3, max_patients=3000),
        stage1=Stage1Config(rounds=5),
        stage2=Stage2Config(epochs=3),
    ).validate()
    loaded = load_dataset(config.data, data_dir)
    docs = {}
    for backend in BACKENDS:
        runner = make_stage1_runner(backend, FlowerConfig(workdir_parent=str(tmp_path)))
        result = run_experiment(
            loaded.cohort, loaded.partition, config, source=loaded.source, stage1_runner=runner
        )
        docs[backend] = result.to_dict()
    ref = docs["local"]
    assert len(ref["rounds"]) == 5
    for backend in ("flower-sim", "flower-deployment"):
        doc = docs[backend]
        assert len(doc["rounds"]) == len(ref["rounds"])
        for r_ref, r in zip(ref["rounds"], doc["rounds"], strict=True):
            assert r["participants"] == [0, 1, 2]
            assert r["lambda"].keys() == r_ref["lambda"].keys()
            for s, lam in r_ref["lambda"].items():
                assert r["lambda"][s] == pytest.approx(lam, abs=LAMBDA_TOL), (backend, r["round"])
        for name, rep_ref in ref["objectives"].items():
            rep = doc["objectives"][name]
            for key in ("pooled", "mean_over_clients", "std_over_clients"):
                assert _close(rep[key], rep_ref[key], METRIC_TOL), (backend, name, key)
            for c_ref, c in zip(rep_ref["clients"], rep["clients"], strict=True):
                assert c["client"] == c_ref["client"]
                assert _close(c["value"], c_ref["value"], METRIC_TOL), (backend, name, c)
