"""fedxgb through the run pipeline: calibrated, packaged, deterministic."""

import numpy as np
import torch

from fedcare_core.algorithms.fedxgb.predictor import TreeInput
from fedcare_core.config import DataConfig, ExperimentConfig, Stage1Config
from fedcare_core.config.method_options import baselines
from fedcare_core.predict.predictors import predictor_from_spec
from fedcare_core.run.pipeline import run_experiment
from tests.fedcare_core.synthetic import PARTITION, make_cohort


def _run(seed: int = 0, personal: int = 20):
    config = ExperimentConfig(
        algorithm="fedxgb",
        seed=seed,
        data=DataConfig(clients=4),
        stage1=Stage1Config(rounds=5),
        baselines=baselines(fedxgb_depth=3, fedxgb_personal_trees=personal),
    )
    return run_experiment(make_cohort(400), PARTITION, config)


def test_every_client_deploys_calibrated_trees_with_no_class_weight_to_undo():
    result = _run()
    doc = result.to_dict()
    assert set(doc["objectives"]) == {"early_discharge", "readmission", "los"}
    assert all(isinstance(p, TreeInput) for p in result.predictors)
    for client in doc["clients"]:
        for entry in client.get("calibration", {}).values():
            reason = entry["reason"]
            assert "class weight 1 undone" in reason or "unweighted" in reason
    assert [r["round"] for r in doc["rounds"]] == [1, 2, 3, 4, 5]
    assert "trees per objective" in doc["stage1"]["notes"][0]


def test_the_packaged_model_scores_like_the_deployed_one():
    result = _run()
    for client, predictor in zip(result.federation.clients, result.predictors, strict=True):
        rebuilt = predictor_from_spec(predictor.spec(), predictor.state_dict())
        xc, xu = torch.from_numpy(client.test.x_common), torch.from_numpy(client.test.x_private)
        np.testing.assert_array_equal(rebuilt.predictions(xc, xu), predictor.predictions(xc, xu))
        probabilities = predictor.predictions(xc, xu)[
            :, [i for i, k in enumerate(predictor.kinds) if k == "binary"]
        ]
        assert ((probabilities >= 0) & (probabilities <= 1)).all()


def test_the_same_seed_gives_the_same_results_and_own_trees_change_them():
    a, b = _run(seed=2), _run(seed=2)
    assert a.to_dict()["objectives"] == b.to_dict()["objectives"]
    federated_only = _run(seed=2, personal=0)
    kept = [p.network.sizes()["personal"] for p in a.predictors]
    assert any(n > 0 for sizes in kept for n in sizes)
    assert all(n == 0 for p in federated_only.predictors for n in p.network.sizes()["personal"])
