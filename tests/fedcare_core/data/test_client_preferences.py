"""Clients given their clinical preferences, checked against the dataset (issue 31)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
import torch

from fedcare_core.config import DataConfig, ExperimentConfig, Stage1Config, Stage2Config
from fedcare_core.config.preferences import Preference, decision_threshold
from fedcare_core.data.client_preferences import with_preferences
from fedcare_core.data.client_store import load_client_data, save_client_data
from fedcare_core.data.subgroups import SensitiveAttribute
from fedcare_core.errors import ConfigError
from fedcare_core.evaluation.clients import decision_points
from fedcare_core.nn.training import client_losses, loss_groups, objective_kinds
from fedcare_core.run.pipeline import prepare_federation, run_experiment
from tests.fedcare_core.synthetic import PARTITION, make_cohort

SEX = SensitiveAttribute("sex", "sex")


@pytest.fixture(scope="module")
def cohort():
    return replace(make_cohort(600), sensitive=(SEX,))


def _config(preferences: str = "", **kw) -> ExperimentConfig:
    return ExperimentConfig(
        algorithm="fedcare",
        preferences=preferences,
        data=DataConfig(clients=3),
        stage1=Stage1Config(rounds=4, batch_size=32),
        stage2=Stage2Config(epochs=2, batch_size=32),
        bootstrap=0,
        **kw,
    )


def test_every_client_pursuing_a_preferred_objective_states_it(cohort):
    config = _config("readmission:fair(sex) *:sensitivity", sensitivity_weight=3.0)
    fed = prepare_federation(cohort, PARTITION, config, None)
    for client in fed.clients:
        expected = {}
        if "readmission" in client.objectives:
            expected["readmission"] = Preference("fair", 1.0, "sex", "auroc")
        if "early_discharge" in client.objectives:
            expected["early_discharge"] = Preference("sensitivity", 3.0)
        assert dict(client.preferences) == expected
    assert any(c.preferences for c in fed.clients)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("mortality:sensitivity", "'mortality' is not an objective of the dataset"),
        ("los:sensitivity", "'los' is a regression objective"),
        ("readmission:fair(race)", "'race' is not a sensitive attribute of the dataset"),
        ("readmission:fair", "preferences: 'readmission:fair'"),
    ],
)
def test_a_preference_the_dataset_cannot_honour_is_refused_naming_it(cohort, text, message):
    with pytest.raises(ConfigError, match=message):
        prepare_federation(cohort, PARTITION, _config(text), None)


def test_the_preferences_travel_with_a_clients_stored_data(cohort, tmp_path):
    fed = prepare_federation(cohort, PARTITION, _config("*:fair(sex,sensitivity)"), None)
    client = next(c for c in fed.clients if c.preferences)
    loaded = load_client_data(save_client_data(client, tmp_path / "c"))
    assert loaded.preferences == client.preferences


def test_a_fairness_loss_reads_its_attributes_codes_and_others_none(cohort):
    fed = prepare_federation(cohort, PARTITION, _config("readmission:fair(sex)"), None)
    client = next(c for c in fed.clients if "readmission" in c.objectives)
    losses = client_losses(client, objective_kinds(fed))
    groups = loss_groups(losses, client.train)
    assert set(groups) == {"readmission"}
    codes = groups["readmission"].numpy()
    labels = client.train.subgroups["sex"]
    assert len(codes) == client.train.n
    assert np.array_equal(codes, (labels == "M").astype(np.int64))
    plain = prepare_federation(cohort, PARTITION, _config(), None)
    assert with_preferences(plain, {}, cohort) is plain
    for c in plain.clients:
        assert loss_groups(client_losses(c, objective_kinds(fed)), c.train) == {}


def test_each_clients_decision_threshold_is_its_losss_cost_threshold(cohort):
    fed = prepare_federation(cohort, PARTITION, _config("early_discharge:sensitivity"), None)
    points = decision_points(fed)
    uncalibrated = decision_points(fed, calibrated=False)
    for client in fed.clients:
        losses = client_losses(client, objective_kinds(fed))
        for name, loss in losses.items():
            if loss.kind != "binary":
                assert (name, client.client_id) not in points
                continue
            assert points[(name, client.client_id)] == decision_threshold(loss.pos_weight)
            assert uncalibrated[(name, client.client_id)] == 0.5


@pytest.fixture(scope="module")
def runs(cohort):
    return {
        text: run_experiment(cohort, PARTITION, _config(text)).to_dict()
        for text in ("", "*:sensitivity", "*:fair(sex)")
    }


def test_a_sensitivity_preference_flags_more_patients_at_its_decision_threshold(runs):
    for name in ("early_discharge", "readmission"):
        plain = runs[""]["objectives"][name]["clinical"]
        preferred = runs["*:sensitivity"]["objectives"][name]["clinical"]
        assert preferred["decision_sensitivity"] >= plain["decision_sensitivity"]
        assert preferred["decision_specificity"] <= plain["decision_specificity"]
        for key in ("net_benefit", "net_benefit_all"):
            assert -1.0 <= preferred[key] <= 1.0


def test_the_results_say_who_stated_which_preference(runs):
    doc = runs["*:fair(sex)"]
    stated = doc["objectives"]["readmission"]["preferences"]
    clients = [c["client"] for c in doc["clients"] if "readmission" in c["objectives"]]
    assert stated == {"fair(sex)": clients}
    assert "preferences" not in runs[""]["objectives"]["readmission"]
    entry = next(c for c in doc["clients"] if "readmission" in c["objectives"])
    assert entry["preferences"]["readmission"]["label"] == "fair(sex)"
    json.dumps(doc)  # JSON-able


def test_a_preference_changes_training_and_the_same_preference_repeats_exactly(cohort, runs):
    again = run_experiment(cohort, PARTITION, _config("*:fair(sex)")).to_dict()
    assert again["objectives"] == runs["*:fair(sex)"]["objectives"]
    assert runs["*:fair(sex)"]["rounds"] != runs[""]["rounds"]


def test_the_loss_sees_the_batchs_subgroups_during_training(cohort, monkeypatch):
    from fedcare_core.objectives import losses

    seen: list[int] = []
    real = losses.subgroup_gap

    def spy(score, target, groups, metric):
        seen.append(len(torch.unique(groups)))
        return real(score, target, groups, metric)

    monkeypatch.setattr(losses, "subgroup_gap", spy)
    run_experiment(cohort, PARTITION, _config("readmission:fair(sex)"))
    assert seen and max(seen) == 2
