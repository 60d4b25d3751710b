from __future__ import annotations

import re

import pytest

from fedcare.tracking import naming
from fedcare_core.config import (
    DataConfig,
    ExperimentConfig,
    Stage1Config,
    Stage2Config,
)
from fedcare_core.config.presets import baby_config


def _doc(config: ExperimentConfig) -> dict[str, object]:
    return {
        "algorithm": config.algorithm,
        "dataset": config.data.dataset,
        "config": config.to_dict(),
    }


def test_a_default_run_is_named_by_seed_then_algorithm_k_t():
    assert naming.run_name(_doc(ExperimentConfig())) == "seed0 · fedcare-K10-T100"
    config = ExperimentConfig(algorithm="fedavg", seed=3, data=DataConfig(dataset="mimic3"))
    assert naming.run_name(_doc(config)) == "seed3 · fedavg-K10-T100"
    assert naming.describe_variant(config.to_dict(), "mimic3") == "default"


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (
            ExperimentConfig(data=DataConfig(rho=0.5, client_split="dirichlet")),
            "seed0 · fedcare-K10-T100-rho0.5-dirichlet",
        ),
        (
            ExperimentConfig(
                data=DataConfig(clients=5, objectives_per_client=2, max_patients=1000),
                stage1=Stage1Config(rounds=20, solver="slsqp", normalise="l2", qp_scope="backbone"),
            ),
            "seed0 · fedcare-K5-T20-m2-n1000-slsqp-norm-l2-qp-backbone",
        ),
        (ExperimentConfig(threads=4, seed=7), "seed7 · fedcare-K10-T100"),
        (
            ExperimentConfig(
                calibration="local",
                data=DataConfig(early_discharge="home", readmission_exclude="deaths-ama-transfers"),
            ),
            "seed0 · fedcare-K10-T100-readm-excl-deaths-ama-transfers-ed-home-cal-local",
        ),
    ],
)
def test_the_variant_spells_out_the_settings_that_matter(config, expected):
    assert naming.run_name(_doc(config)) == expected


def test_other_departures_fold_into_one_stable_hash_token():
    a = ExperimentConfig(stage2=Stage2Config(epochs=2))
    b = ExperimentConfig(stage2=Stage2Config(epochs=3))
    name_a, name_b = naming.run_name(_doc(a)), naming.run_name(_doc(b))
    assert re.fullmatch(r"seed0 · fedcare-K10-T100-cfg[0-9a-f]{4}", name_a)
    assert name_a != name_b
    assert naming.run_name(_doc(a)) == name_a  # deterministic
    assert naming.describe_variant(a.to_dict(), "diabetes130") == "stage2.epochs=2"


def test_the_setting_is_the_name_without_the_seed_and_the_name_parses_back():
    config = baby_config(seed=4)
    doc = _doc(config)
    assert naming.run_name(doc) == "seed4 · " + naming.setting_name(doc)
    assert naming.setting_name(doc).startswith("fedcare-K3-T2-n600-cfg")
    assert naming.config_setting_name(config) == naming.setting_name(doc)
    assert naming.parse_run_name(naming.run_name(doc)) == (4, naming.setting_name(doc))
    for other in ("fedcare-K10-T100-seed0", "stage2-client3", "seedx · a", "seed1 · ", "flow"):
        assert naming.parse_run_name(other) is None


def test_a_parent_run_is_named_by_its_settings_and_seeds():
    assert naming.seeds_label([0]) == "seed 0"
    assert naming.seeds_label([2, 0, 1, 1]) == "seeds 0-2"
    assert naming.seeds_label([5, 0, 3]) == "seeds 0,3,5"
    assert naming.parent_run_name(["fedcare-K10-T100"], [0]) == "flow · fedcare-K10-T100 · seed 0"
    settings = ["fedcare-K10-T100", "fedavg-K10-T100", "fedcare-K10-T100"]
    assert naming.parent_run_name(settings, range(10)) == (
        "flow · fedcare-K10-T100 + fedavg-K10-T100 · seeds 0-9"
    )
    document = {"seed": 2, "run_name": "fedcare-20260101T020000-0123abcd-seed2"}
    assert naming.stage1_run_name(document) == "seed2 · fedcare-20260101T020000-0123abcd"
    assert naming.stage1_run_name({"seed": 0, "run_name": "mine"}) == "seed0 · mine"


def test_metric_keys_carry_the_objective_and_its_metric_in_a_ui_section():
    assert naming.lambda_key("readmission") == "lambda/readmission"
    assert naming.round_key("loss.los") == "stage1/loss.los"
    # MLflow's UI sorts its named chart sections: λ* first, then the other per-round traces.
    assert sorted(["test", "test_by_client", naming.ROUNDS_SECTION, naming.LAMBDA_SECTION]) == [
        "lambda",
        "stage1",
        "test",
        "test_by_client",
    ]
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


def test_a_file_name_spells_out_what_the_run_name_hashes():
    from fedcare.cli.output import default_results_file

    quick = ExperimentConfig(
        data=DataConfig(clients=3, max_patients=2000), stage1=Stage1Config(rounds=3),
        stage2=Stage2Config(epochs=1),
    )  # fmt: skip
    assert naming.config_setting_name(quick).startswith("fedcare-K3-T3-n2000-cfg")
    assert str(default_results_file(quick)) == (
        "results/diabetes130-fedcare-K3-T3-n2000-stage2.epochs=1-seed0.json"
    )
    assert str(default_results_file(ExperimentConfig(seed=2))) == (
        "results/diabetes130-fedcare-K10-T100-seed2.json"
    )


@pytest.mark.parametrize(
    ("stage1", "spelt"),
    [({"local_lr": 0.0123456789}, "stage1.local_lr=0.0123456789"),
     ({"secagg": True}, "stage1.secagg=true"),
     ({"batch_size": 64, "local_steps": 2}, "stage1.batch_size=64-stage1.local_steps=2")],
)  # fmt: skip
def test_each_other_departure_is_spelt_exactly(stage1, spelt):
    config = ExperimentConfig(stage1=Stage1Config(**stage1))
    assert naming.readable_variant(config.to_dict(), "diabetes130") == spelt


def test_configurations_that_differ_never_share_a_file_name():
    from dataclasses import replace

    base = ExperimentConfig()
    variants = (
        [
            replace(base, stage1=replace(base.stage1, local_lr=v))
            for v in (0.001, 0.0010000001, 0.01)
        ]
        + [
            replace(base, model=replace(base.model, head_hidden=h))
            for h in ((32, 16), (64,), (3, 216))
        ]
        + [replace(base, stage2=replace(base.stage2, epochs=e)) for e in (1, 2)]
    )
    names = [naming.readable_variant(c.to_dict(), "diabetes130") for c in variants]
    assert len(set(names)) == len(names) and not any("cfg" in n for n in names)
    assert "model.head_hidden=32x16" in names


def test_what_cannot_be_spelt_is_still_hashed_and_the_name_stays_short():
    readable = naming.readable_variant  # a text that reads as a number, a long or odd text
    for odd in ("2", "null", "x" * 40, "a/b c"):
        config = {"data": {"early_discharge": "los"}, "bootstrap": 200, "preferences": odd}
        assert re.fullmatch(r"cfg[0-9a-f]{4}", readable(config, "diabetes130"))
    many = ExperimentConfig(
        stage1=Stage1Config(local_lr=0.0011, global_lr=0.011, batch_size=17, local_steps=3),
        stage2=Stage2Config(lr=0.0021, batch_size=33, patience=7, weight_decay=0.00011,
                            backbone_lr_scale=0.55, prox=0.123, epochs=9),
    )  # fmt: skip
    assert re.fullmatch(r"cfg[0-9a-f]{4}", readable(many.to_dict(), "diabetes130"))
