"""A differentially private run in MLflow: ε per round, the mechanism's settings, the tags."""

from __future__ import annotations

import dataclasses

import pytest

from fedcare.tracking import client_registry, log_run, store
from fedcare_core.run.pipeline import run_experiment
from tests.fedcare.tracking.conftest import tiny_config
from tests.fedcare_core.synthetic import PARTITION, make_cohort

pytestmark = pytest.mark.filterwarnings("ignore:No complete tensor found:UserWarning")


@pytest.fixture(scope="module")
def private_result():
    config = tiny_config()
    stage1 = dataclasses.replace(config.stage1, dp_noise_multiplier=1.5, dp_clip=0.5)
    return run_experiment(make_cohort(300), PARTITION, dataclasses.replace(config, stage1=stage1))


def test_a_private_run_logs_epsilon_per_round_and_its_mechanism(logged, private_result):
    doc = private_result.to_dict()
    run_id = log_run.log_experiment(doc, parent_run_id=logged.parent_id, run_name="dp")
    client = store.client()
    history = sorted(client.get_metric_history(run_id, "stage1/dp.epsilon"), key=lambda m: m.step)
    assert [m.step for m in history] == [1, 2, 3]
    assert [m.value for m in history] == pytest.approx([r["epsilon"] for r in doc["rounds"]])
    assert history[-1].value == pytest.approx(doc["privacy"]["epsilon"])
    run = client.get_run(run_id)
    assert run.data.metrics["dp.noise_multiplier"] == 1.5
    assert run.data.metrics["dp.clip"] == 0.5
    by = doc["privacy"]["epsilon_by_accountant"]
    assert run.data.metrics["dp.epsilon_pld"] == pytest.approx(by["pld"])
    assert run.data.metrics["dp.epsilon_rdp"] == pytest.approx(by["rdp"])
    assert by["pld"] == pytest.approx(history[-1].value) and by["rdp"] > by["pld"]
    assert run.data.tags[log_run.TAG_PRIVACY].startswith("gaussian-client-level-joint-clip (dp-")
    # A run without DP says so, and logs no ε.
    plain = client.get_run(logged.run_id)
    assert plain.data.tags[log_run.TAG_PRIVACY] == "none"
    assert "stage1/dp.epsilon" not in plain.data.metrics


def test_a_registered_models_tags_carry_its_privacy(logged, private_result):
    tags = client_registry.privacy_tags(private_result)
    assert tags["fedcare.privacy"].startswith("client-level DP")
    epsilon = private_result.to_dict()["privacy"]["epsilon"]
    assert tags["fedcare.dp.epsilon"] == f"{epsilon:.4g}"  # for people: 4 significant digits
    assert float(tags["fedcare.dp.epsilon"]) == pytest.approx(epsilon, rel=1e-3)
    assert tags["fedcare.dp.noise"] == "os-entropy"
    assert client_registry.privacy_tags(logged.result) == {"fedcare.privacy": "none"}
