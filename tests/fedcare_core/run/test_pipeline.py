import json

import pytest

from fedcare_core.config import DataConfig, ExperimentConfig, Stage1Config, Stage2Config
from fedcare_core.run.pipeline import calibration_setting, run_experiment
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


def test_each_objective_reports_the_pooled_clinical_metrics():
    """AUPRC, Brier beside its base-rate reference, calibration; LOS bias by band."""
    import numpy as np

    from fedcare_core.evaluation.clinical import brier_reference

    res = run_experiment(make_cohort(300), PARTITION, _config())
    doc = res.to_dict()
    for name, rep in doc["objectives"].items():
        clinical = rep["clinical"]
        if name == "los":
            assert set(clinical) >= {"bias_days", "mae_days_0-3", "bias_days_7-inf"}
            continue
        assert set(clinical) == {
            "auprc", "brier", "brier_reference", "ece", "calibration_slope",
            "calibration_intercept", "mean_risk", "observed_rate",
            "sensitivity", "specificity", "ppv", "npv", "decision_sensitivity",
            "decision_specificity", "decision_ppv", "net_benefit", "net_benefit_all",
        }  # fmt: skip
        for client in rep["clients"]:
            assert {"auprc", "brier", "threshold", "sensitivity"} <= set(client["clinical"])
            assert {"decision_threshold", "net_benefit"} <= set(client["clinical"])
        assert set(rep["clinical_spread"]["brier"]) == {"mean", "std", "min", "max", "n"}
        assert 0.0 <= clinical["brier"] <= 1.0
    # The reference is the observed rate's Brier on the pooled test rows.
    name = next(n for n in doc["objectives"] if n != "los")
    ys = []
    for client in res.federation.clients:
        if name in client.objectives:
            y = client.split("test").y[:, client.objectives.index(name)]
            ys.append(y[np.isfinite(y)])
    y_all = np.concatenate(ys)
    expected = brier_reference(y_all, np.full(len(y_all), 0.5)).value
    assert doc["objectives"][name]["clinical"]["brier_reference"] == pytest.approx(expected)
    assert doc["objectives"][name]["clinical"]["observed_rate"] == pytest.approx(y_all.mean())


def test_each_objective_also_reports_the_deployed_models_on_validation():
    from fedcare_core.evaluation.clients import evaluate
    from fedcare_core.predict.predictors import predictor_scorer

    res = run_experiment(make_cohort(300), PARTITION, _config())
    doc = res.to_dict()
    scorers = [predictor_scorer(p) for p in res.predictors]
    val = evaluate(res.federation, scorers, "val")
    for rep in val.objectives:
        entry = doc["objectives"][rep.name]["validation"]
        assert entry == {"pooled": rep.pooled, "mean_over_clients": rep.mean_over_clients}
    assert any(
        doc["objectives"][s]["validation"]["pooled"] != doc["objectives"][s]["pooled"]
        for s in doc["objectives"]
    )


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
        {"stage1": {"solver": "qp"}},
        {"stage1": {"normalise": "l3"}},
        {"stage1": {"qp_scope": "x"}},
    ],
)
def test_unknown_option_strings_raise(bad):
    from fedcare_core.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown"):
        _config().with_overrides(**bad)


class ReversedExecutor:
    """Runs a per-client phase's clients last to first (an executor may run them in any order)."""

    def __init__(self):
        self.phases = []

    def run(self, phase, fn, *args):
        self.phases.append(phase)
        return fn(*args)

    def map(self, phase, fn, items, *shared, progress=None):
        self.phases.append(phase)
        done = {i: fn(item, *shared) for i, item in reversed(list(enumerate(items)))}
        return [done[i] for i in range(len(items))]


def test_clients_in_any_order_give_the_same_result():
    """The per-client phase goes through the executor; its order changes no number."""
    from fedcare_core.run.executors import ProcessPool

    cohort, cfg = make_cohort(300), _config(seed=4)
    expected = run_experiment(cohort, PARTITION, cfg).to_dict()
    executor = ReversedExecutor()
    got = run_experiment(cohort, PARTITION, cfg, executor=executor).to_dict()
    pooled = run_experiment(cohort, PARTITION, cfg, executor=ProcessPool(2)).to_dict()
    for d in (expected, got, pooled):
        d.pop("timing")
    assert executor.phases == ["stage1", "stage2", "evaluate"]
    assert got == expected
    assert pooled == expected


def test_a_missing_stage2_result_is_refused():
    from fedcare_core.algorithms import get_algorithm
    from fedcare_core.algorithms.base import Rounds, RunInputs
    from fedcare_core.run.pipeline import prepare_federation

    cohort, cfg = make_cohort(300), _config()
    fed = prepare_federation(cohort, PARTITION, cfg, None)
    result = run_experiment(cohort, PARTITION, cfg)
    inputs = RunInputs(fed, fed, None, cfg)
    with pytest.raises(ValueError, match="expected one for each"):
        get_algorithm("fedcare").predictors(inputs, Rounds(result.stage1), result.stage2[:-1])


def test_a_shared_stage1_gives_fedcare_b_its_own_document():
    """The engine scores FedCARE-B from FedCARE's Stage 1: the same as running it alone."""
    from fedcare_core.run.pipeline import prepare_federation, run_algorithm
    from fedcare_core.run.results import DataProvenance

    cohort = make_cohort(300)
    alone = run_experiment(cohort, PARTITION, _config("fedcare-b", seed=2)).to_dict()
    fed = prepare_federation(cohort, PARTITION, _config(seed=2), None)
    provenance = DataProvenance.of(cohort)
    first = run_algorithm(fed, _config(seed=2), provenance=provenance)
    shared = run_algorithm(
        fed, _config("fedcare-b", seed=2), provenance=provenance, stage1=first.stage1
    ).to_dict()
    for d in (alone, shared):
        d.pop("timing")
    assert shared == alone


def test_dp_runs_calibrate_each_client_alone_so_epsilon_covers_every_release():
    from dataclasses import replace

    plain = _config().with_overrides(data={"clients": 8})  # objectives with several holders
    private = plain.with_overrides(stage1={"dp_noise_multiplier": 1.0})
    assert calibration_setting(plain) == "auto"
    assert calibration_setting(private) == "local"
    assert calibration_setting(replace(private, calibration="platt")) == "platt"
    for config, federated in ((plain, True), (private, False)):
        result = run_experiment(make_cohort(2000), PARTITION, config)
        reasons = [c.reason for p in result.predictors for c in p.calibration.values()]
        assert reasons and any("federated recalibration" in r for r in reasons) == federated


def test_a_signal_whose_exception_was_swallowed_still_ends_the_run_at_the_next_round():
    import os
    import signal
    import time

    from fedcare_core.run.interrupts import Interrupted, signals_raise

    reported: list[tuple[str, int]] = []

    def progress(phase: str, done: int, total: int) -> None:
        reported.append((phase, done))
        if done == 1:
            try:  # the signal lands in code that swallows what the handler raised
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)
            except Interrupted:
                pass

    with pytest.raises(Interrupted) as caught, signals_raise():
        run_experiment(make_cohort(300), PARTITION, _config(), progress=progress)
    assert caught.value.signum == signal.SIGTERM
    assert reported == [("stage1", 1)]  # round 2 never reported: the run ended before it
