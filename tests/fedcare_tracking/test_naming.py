from __future__ import annotations

import re

import pytest

from fedcare_core.config import (
    DataConfig,
    ExperimentConfig,
    Stage1Config,
    Stage2Config,
)
from fedcare_core.presets import baby_config
from fedcare_tracking import naming


def _doc(config: ExperimentConfig) -> dict[str, object]:
    return {
        "algorithm": config.algorithm,
        "dataset": config.data.dataset,
        "config": config.to_dict(),
    }


def test_a_default_run_is_named_by_algorithm_k_t_and_seed():
    assert naming.run_name(_doc(ExperimentConfig())) == "fedcare-K10-T100-seed0"
    config = ExperimentConfig(algorithm="fedavg", seed=3, data=DataConfig(dataset="mimic3"))
    assert naming.run_name(_doc(config)) == "fedavg-K10-T100-seed3"
    assert naming.describe_variant(config.to_dict(), "mimic3") == "default"


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (
            ExperimentConfig(data=DataConfig(rho=0.5, client_split="dirichlet")),
            "fedcare-K10-T100-rho0.5-dirichlet-seed0",
        ),
        (
            ExperimentConfig(
                data=DataConfig(clients=5, objectives_per_client=2, max_patients=1000),
                stage1=Stage1Config(rounds=20, solver="slsqp", normalise="l2", qp_scope="backbone"),
            ),
            "fedcare-K5-T20-m2-n1000-slsqp-norm-l2-qp-backbone-seed0",
        ),
        (ExperimentConfig(threads=4, seed=7), "fedcare-K10-T100-seed7"),
    ],
)
def test_the_variant_spells_out_the_settings_that_matter(config, expected):
    assert naming.run_name(_doc(config)) == expected


def test_other_departures_fold_into_one_stable_hash_token():
    a = ExperimentConfig(stage2=Stage2Config(epochs=2))
    b = ExperimentConfig(stage2=Stage2Config(epochs=3))
    name_a, name_b = naming.run_name(_doc(a)), naming.run_name(_doc(b))
    assert re.fullmatch(r"fedcare-K10-T100-cfg[0-9a-f]{4}-seed0", name_a)
    assert name_a != name_b
    assert naming.run_name(_doc(a)) == name_a  # deterministic
    assert naming.describe_variant(a.to_dict(), "diabetes130") == "stage2.epochs=2"


def test_the_setting_is_the_name_without_the_seed():
    doc = _doc(baby_config(seed=4))
    assert naming.run_name(doc) == naming.setting_name(doc) + "-seed4"
    assert naming.setting_name(doc).startswith("fedcare-K3-T2-n600-cfg")


def test_metric_keys_carry_the_objective_and_its_metric_in_a_ui_section():
    assert naming.test_key("readmission", "auroc", "pooled") == "test/readmission.auroc.pooled"
    assert naming.client_key("los", "mae_days", 3) == "test_by_client/los.mae_days.client3"
    assert naming.stage2_test_key("los", "mae_days") == "test/los.mae_days"
    assert (
        naming.summary_key("fedcare", "los", "mae_days", "pooled", "std")
        == "test_over_seeds/fedcare/los.mae_days.pooled.std"
    )
    assert naming.summary_key(None, "los", "mae_days", "pooled", "mean") == (
        "test_over_seeds/los.mae_days.pooled.mean"
    )
    assert naming.seeds_key("fedavg") == "test_over_seeds/fedavg/seeds"
