"""Every algorithm's deployed predictors: what the evaluation scores, rebuilt from a spec."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from fedcare_core.algorithms import algorithm_names
from fedcare_core.config import (
    DataConfig,
    ExperimentConfig,
    Stage1Config,
    Stage2Config,
)
from fedcare_core.config.method_options import baselines
from fedcare_core.evaluation.clients import evaluate_with_validation
from fedcare_core.predict.predictors import predictor_from_spec, predictor_scorer
from fedcare_core.run.pipeline import evaluation_settings, interval_evaluation, run_experiment
from tests.fedcare_core.synthetic import PARTITION, make_cohort


def _config(algorithm: str) -> ExperimentConfig:
    return ExperimentConfig(
        algorithm=algorithm,
        seed=3,
        data=DataConfig(clients=3),
        stage1=Stage1Config(rounds=2, batch_size=32),
        stage2=Stage2Config(epochs=2, batch_size=32),
        baselines=baselines(bound_epochs=2),
    )


@pytest.fixture(scope="module")
def cohort():
    return make_cohort(240)


@pytest.mark.parametrize("algorithm", algorithm_names())
def test_predictors_are_what_the_evaluation_scored(cohort, algorithm):
    result = run_experiment(cohort, PARTITION, _config(algorithm))
    fed = result.federation
    assert len(result.predictors) == len(fed.clients)
    scorers = [predictor_scorer(p) for p in result.predictors]
    rescored = evaluate_with_validation(fed, scorers, evaluation_settings(result.config))
    assert interval_evaluation(rescored, fed, result.predictors) == result.evaluation
    for client, predictor in zip(fed.clients, result.predictors, strict=True):
        assert predictor.objectives == client.objectives
        split = client.test
        xc, xu = torch.from_numpy(split.x_common), torch.from_numpy(split.x_private)
        # Through JSON, as a package stores it: the rebuilt predictor is the same function.
        spec = json.loads(json.dumps(predictor.spec()))
        rebuilt = predictor_from_spec(spec, predictor.state_dict())
        with torch.no_grad():
            out = predictor(xc, xu)
            assert out.shape == (split.n, len(client.objectives))
            assert torch.equal(rebuilt(xc, xu), out)
        for j, kind in enumerate(predictor.kinds):
            column = out[:, j].numpy()
            if kind == "binary":
                assert ((column > 0) & (column < 1)).all()
            else:
                assert (column >= 0).all()


def test_weights_of_another_shape_are_refused(cohort):
    result = run_experiment(cohort, PARTITION, _config("fedcare"))
    spec = result.predictors[0].spec()
    spec["private_dim"] += 1
    with pytest.raises(ValueError, match="do not fit"):
        predictor_from_spec(spec, result.predictors[0].state_dict())
    with pytest.raises(ValueError, match="unknown predictor kind"):
        predictor_from_spec({"kind": "pickle"}, {})


def test_a_union_predictor_places_private_columns_where_the_union_view_does(cohort):
    from fedcare_core.algorithms.union.features import union_federation

    result = run_experiment(cohort, PARTITION, _config("fedavg"))
    view, _ = union_federation(result.federation)
    for client, union_client, predictor in zip(
        result.federation.clients, view.clients, result.predictors, strict=True
    ):
        xc, xu = torch.from_numpy(client.test.x_common), torch.from_numpy(client.test.x_private)
        np.testing.assert_array_equal(predictor.union(xc, xu).numpy(), union_client.test.x_common)
