"""Every binary objective of a deployed model is calibrated on its client's own rows."""

from __future__ import annotations

import dataclasses
import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from fedcare_core.config import ExperimentConfig
from fedcare_core.data.loading import load_dataset
from fedcare_core.evaluation.federated_recalibration import (
    SiteValidation,
    federated_calibrators,
)
from fedcare_core.evaluation.recalibration import DEFAULT_RULE, fit_calibrator
from fedcare_core.objectives import make_loss
from fedcare_core.predict.calibrate import (
    calibrate_predictors,
    class_weight,
    federation_class_weight,
)
from fedcare_core.predict.package import load_package, save_package
from fedcare_core.run.packaging import client_package
from fedcare_core.run.pipeline import run_experiment


def _config(calibration: str, algorithm: str = "fedavg") -> ExperimentConfig:
    return ExperimentConfig.from_dict(
        {
            "algorithm": algorithm,
            "seed": 3,
            "calibration": calibration,
            "data": {"dataset": "diabetes130", "clients": 3, "max_patients": 6000},
            "stage1": {"rounds": 15},
            "stage2": {"epochs": 3},
        }
    )


@pytest.fixture(scope="module")
def loaded(data_dir: Path):
    return load_dataset(_config("auto").data, data_dir)


@pytest.fixture(scope="module")
def runs(loaded):
    return {
        setting: run_experiment(loaded.cohort, loaded.partition, _config(setting))
        for setting in ("auto", "local", "none")
    }


def _pooled(result, objective):
    return result.to_dict()["objectives"][objective]["clinical"]


def test_readmission_risks_match_the_observed_rate_only_when_calibrated(runs):
    raw, calibrated = _pooled(runs["none"], "readmission"), _pooled(runs["auto"], "readmission")
    assert raw["mean_risk"] > 2 * raw["observed_rate"]  # the class weight's inflation
    assert raw["brier"] > raw["brier_reference"]
    assert calibrated["mean_risk"] == pytest.approx(calibrated["observed_rate"], abs=0.04)
    # a tiny run barely beats the base rate, but no longer loses to it by a factor of two
    assert calibrated["brier"] < 1.01 * calibrated["brier_reference"] < raw["brier"] / 2
    assert calibrated["ece"] < raw["ece"] / 3


def _site_validation(client, predictor, objective, weight=None):
    if objective not in client.objectives or objective not in predictor.objectives:
        return None
    j = client.objectives.index(objective)
    val = client.val
    scores = predictor.uncalibrated(
        torch.from_numpy(val.x_common), torch.from_numpy(val.x_private), objective
    )
    if weight is None:
        weight = make_loss("binary", client.train.y[:, j]).pos_weight
    return SiteValidation(val.y[:, j], scores, weight)


def test_auto_recalibrates_each_objective_across_its_clients(runs):
    result = runs["auto"]
    pairs = list(zip(result.federation.clients, result.predictors, strict=True))
    first = pairs[0][1]
    binary = [o for o, k in zip(first.objectives, first.kinds, strict=True) if k == "binary"]
    assert binary
    for objective in binary:
        shared = federation_class_weight(result.federation.clients, objective, "binary")  # FedAvg's
        sites = [_site_validation(c, p, objective, shared) for c, p in pairs]
        expected = federated_calibrators(sites, DEFAULT_RULE)
        deployed = [objective in p.objectives for _, p in pairs]
        got = [p.calibration[objective] for _, p in pairs if objective in p.objectives]
        assert got == [e for e, d in zip(expected, deployed, strict=True) if d]
        held = [e for e, s in zip(expected, sites, strict=True) if s is not None]
        assert held and all(c.method == "platt" for c in held)


def test_local_calibration_uses_each_clients_own_rows_alone(runs):
    result = runs["local"]
    for client, predictor in zip(result.federation.clients, result.predictors, strict=True):
        for j, objective in enumerate(client.objectives):
            kind = predictor.kinds[predictor.objectives.index(objective)]
            if kind != "binary":
                assert objective not in predictor.calibration
                continue
            val = client.val
            scores = predictor.uncalibrated(
                torch.from_numpy(val.x_common), torch.from_numpy(val.x_private), objective
            )
            weight = make_loss("binary", client.train.y[:, j]).pos_weight
            expected = fit_calibrator(val.y[:, j], scores, pos_weight=weight)
            assert predictor.calibration[objective] == expected


def test_calibration_none_leaves_the_network_probabilities(runs):
    result = runs["none"]
    assert all(c.method == "identity" for p in result.predictors for c in p.calibration.values())
    doc = result.to_dict()
    for client in doc["clients"]:
        for entry in client.get("calibration", {}).values():
            assert entry["method"] == "identity" and entry["reason"].startswith("forced")


def test_the_results_document_says_how_each_model_was_calibrated(runs):
    doc = runs["auto"].to_dict()
    assert doc["config"]["calibration"] == "auto"
    seen = [e for c in doc["clients"] for e in c.get("calibration", {}).values()]
    assert seen and all(
        e["update"] in {"reweighting", "intercept", "logistic"} and "validation rows" in e["reason"]
        for e in seen
    )


def test_calibration_reads_cross_fitted_validation_predictions_and_drops_them(runs):
    result = runs["local"]
    client, predictor = result.federation.clients[0], result.predictors[0]
    objective = next(
        o for o, k in zip(predictor.objectives, predictor.kinds, strict=True) if k == "binary"
    )
    j = client.objectives.index(objective)
    val = client.val
    raw = predictor.uncalibrated(
        torch.from_numpy(val.x_common), torch.from_numpy(val.x_private), objective
    )
    flatter = 1.0 / (1.0 + np.exp(-0.5 * np.log(raw / (1.0 - raw))))  # an overfit model's view
    honest = predictor.with_validation_outputs({objective: flatter})
    alone = dataclasses.replace(result.federation, clients=(client,))
    (again,) = calibrate_predictors(alone, [honest], "local")
    weight = make_loss("binary", client.train.y[:, j]).pos_weight
    expected = fit_calibrator(val.y[:, j], flatter, pos_weight=weight)
    assert again.calibration[objective] == expected
    assert again.calibration[objective] != predictor.calibration[objective]
    assert again.validation_outputs == {}


def test_a_shared_model_undoes_the_federations_class_weight(loaded):
    config = _config("auto").with_overrides(data={"objectives_per_client": 3}, stage1={"rounds": 3})
    result = run_experiment(loaded.cohort, loaded.partition, config)
    clients, objective = result.federation.clients, "readmission"
    held = [c for c in clients if objective in c.objectives]
    assert len(held) == 3
    pooled = np.concatenate([c.train.y[:, c.objectives.index(objective)] for c in held])
    pooled = pooled[np.isfinite(pooled)]
    expected = float((pooled < 0.5).sum() / (pooled > 0.5).sum())
    assert federation_class_weight(clients, objective, "binary") == pytest.approx(expected)
    own = {class_weight(c, objective, "binary") for c in held}
    assert len(own) > 1 and expected not in own  # the clients' own weights differ from it
    # FedAvg deploys one shared model: its calibrators undo the federation's weight.
    reasons = [p.calibration[objective].reason for p in result.predictors]
    assert all(f"class weight {expected:.3g} undone" in r for r in reasons)
    personal = calibrate_predictors(result.federation, result.predictors, "auto", shared=False)
    assert [p.calibration[objective] for p in personal] != [
        p.calibration[objective] for p in result.predictors
    ]


@pytest.mark.parametrize("setting", ["auto", "local"])
def test_calibrating_again_is_deterministic_and_shares_the_network(runs, setting):
    result = runs[setting]
    again = calibrate_predictors(result.federation, result.predictors, setting, shared=True)
    for before, after in zip(result.predictors, again, strict=True):
        assert before.calibration == after.calibration
        assert after.network is before.network


def test_the_package_scores_calibrated_risks(runs, data_dir, tmp_path):
    result = runs["auto"]
    package = client_package(result, 0)
    back = load_package(save_package(package, tmp_path / "model"))
    assert back.predictor.calibration == package.predictor.calibration
    archive = next(data_dir.glob("diabetes130/*.zip"))
    with zipfile.ZipFile(archive) as z:
        name = next(n for n in z.namelist() if n.endswith("diabetic_data.csv"))
        rows = pd.read_csv(io.BytesIO(z.read(name)), nrows=500)
    scored = back.score(rows)
    np.testing.assert_array_equal(scored.to_numpy(), package.score(rows).to_numpy())
    risk = scored["readmission_probability"] if "readmission" in package.objectives else None
    if risk is not None:
        assert risk.mean() < 0.3  # calibrated: near the 11 % rate, not the weighted 0.47
    spec = json.loads((tmp_path / "model" / "package.json").read_text())["predictor"]
    assert set(spec["calibration"]) == {
        s for s, k in zip(package.objectives, package.predictor.kinds, strict=True) if k == "binary"
    }


def test_real_data_results_carry_intervals_and_subgroups(runs):
    doc = runs["auto"].to_dict()
    for entry in doc["objectives"].values():
        main = entry["metric"]
        interval = entry["intervals"][main]
        assert interval["low"] <= entry["pooled"] <= interval["high"]
        assert interval["patients"] <= sum(c["n_test"] for c in entry["clients"])
        assert set(entry["subgroups"]) == {"age", "sex", "race"}
        ages = {g["group"] for g in entry["subgroups"]["age"][main]["groups"]}
        assert ages <= {"<50", "50-70", ">=70"} and len(ages) >= 2
        if main == "auroc":
            assert "sensitivity" in entry["subgroups"]["sex"]
