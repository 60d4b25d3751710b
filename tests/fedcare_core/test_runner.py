import json

import pytest

from fedcare_core.config import DataConfig, ExperimentConfig, Stage1Config, Stage2Config
from fedcare_core.runner import run_experiment
from tests.fedcare_core.synthetic import PARTITION, make_cohort


def _config(algorithm="fedcare", seed=0):
    return ExperimentConfig(
        algorithm=algorithm,
        seed=seed,
        data=DataConfig(clients=3),
        stage1=Stage1Config(rounds=3, batch_size=32),
        stage2=Stage2Config(epochs=3, batch_size=32),
    )


def test_end_to_end_result_document_shape():
    res = run_experiment(make_cohort(300), PARTITION, _config())
    doc = res.to_dict()
    json.dumps(doc)
    assert set(doc) >= {"dataset", "algorithm", "config", "objectives", "rounds", "timing"}
    assert len(doc["rounds"]) == 3
    for r in doc["rounds"]:
        assert set(r["lambda"]) == set(doc["objectives"])
        assert r["d_sq_norm"] >= 0
    for name, rep in doc["objectives"].items():
        assert rep["metric"] == ("mae_days" if name == "los" else "auroc")
        assert rep["pooled"] is not None or rep["reason"]
    assert doc["timing"]["total_s"] > 0
    assert len(doc["stage2"]) == 3


def test_same_seed_same_results_different_seed_different():
    a = run_experiment(make_cohort(300), PARTITION, _config(seed=1)).to_dict()
    b = run_experiment(make_cohort(300), PARTITION, _config(seed=1)).to_dict()
    for d in (a, b):
        d.pop("timing")
    assert a == b
    c = run_experiment(make_cohort(300), PARTITION, _config(seed=2)).to_dict()
    assert c["rounds"][0]["lambda"] != a["rounds"][0]["lambda"]


def test_fedcare_b_skips_stage2():
    doc = run_experiment(make_cohort(300), PARTITION, _config("fedcare-b")).to_dict()
    assert doc["stage2"] == []


def test_personalisation_learns_signal_on_synthetic_data():
    import numpy as np

    cohort = make_cohort(2000)
    cfg = _config().with_overrides(stage2={"epochs": 15, "patience": 15})
    doc = run_experiment(cohort, PARTITION, cfg).to_dict()
    assert doc["objectives"]["early_discharge"]["pooled"] > 0.7
    # LOS depends on common and private features: the model beats predicting the median.
    los = cohort.labels["los"].to_numpy()
    trivial = float(np.mean(np.abs(los - np.median(los))))
    assert doc["objectives"]["los"]["pooled"] < trivial


@pytest.mark.parametrize(
    "bad",
    [
        {"algorithm": "fedsgd"},
        {"stage1": {"solver": "qp"}},
        {"stage1": {"normalise": "l3"}},
        {"stage1": {"qp_scope": "x"}},
    ],
)
def test_unknown_option_strings_raise(bad):
    from fedcare_core.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown"):
        _config().with_overrides(**bad)


def test_phases_in_any_client_order_assemble_the_same_result():
    """The public phases (used by the Prefect flow) reproduce run_experiment exactly."""
    from fedcare_core import runner
    from fedcare_core.stage1 import run_stage1

    cohort, cfg = make_cohort(300), _config(seed=4)
    expected = run_experiment(cohort, PARTITION, cfg).to_dict()
    runner.configure_torch(cfg)
    fed = runner.prepare_federation(cohort, PARTITION, cfg, None)
    stage1 = run_stage1(fed, cfg.model, cfg.stage1, cfg.seed)
    backbone = runner.stage2_backbone(stage1, fed, cfg)
    kinds = runner.objective_kinds(fed)
    stage2 = [runner.run_stage2_client(backbone, c, kinds, cfg) for c in reversed(fed.clients)]
    report = runner.evaluate_experiment(fed, cfg, stage1, stage2)
    got = runner.assemble_result(
        cfg,
        fed,
        stage1,
        stage2,
        report,
        timing={},
        data_sha256=cohort.source_sha256,
        notes=cohort.notes,
    ).to_dict()
    for d in (expected, got):
        d.pop("timing")
    assert got == expected
    with pytest.raises(ValueError, match="expected one for each"):
        runner.evaluate_experiment(fed, cfg, stage1, stage2[:-1])
