from __future__ import annotations

import math

import mlflow.pytorch
import pytest
import torch

from fedcare.tracking import registry, store

pytestmark = [
    pytest.mark.filterwarnings("ignore:No complete tensor found:UserWarning"),
    pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy:DeprecationWarning"),
]


def _champion_version(name):
    mv = registry.champion(name)
    return None if mv is None else int(mv.version)


def test_champion_moves_only_for_a_better_score(logged):
    name = "fedcare-synthetic-backbone"
    assert registry.champion(name) is None
    assert registry.register_backbone(logged.run_id, name, 0.70) == (1, True)
    assert _champion_version(name) == 1
    assert registry.register_backbone(logged.run_id, name, 0.60) == (2, False)
    assert registry.register_backbone(logged.run_id, name, 0.70) == (3, False)  # a tie keeps it
    assert _champion_version(name) == 1
    assert registry.register_backbone(logged.run_id, name, 0.80) == (4, True)
    assert _champion_version(name) == 4

    mc = store.client()
    v2 = mc.get_model_version(name, "2")
    assert v2.tags[registry.TAG_SCORE] == "0.6"
    assert v2.tags[registry.TAG_PROMOTED] == "false"
    assert v2.run_id == logged.run_id
    # The champion is the logged backbone and loads by alias.
    loaded = mlflow.pytorch.load_model(f"models:/{name}@{registry.CHAMPION_ALIAS}")
    x = torch.zeros(3, logged.result.federation.common_width)
    assert loaded(x).shape == (3, len(logged.result.federation.objective_names))


def test_lower_is_better_scores(logged):
    name = "fedcare-synthetic-mae"
    kwargs = {"higher_is_better": False, "score_name": "validation_mae_days"}
    assert registry.register_backbone(logged.run_id, name, 2.5, **kwargs) == (1, True)
    assert registry.register_backbone(logged.run_id, name, 3.0, **kwargs) == (2, False)
    assert registry.register_backbone(logged.run_id, name, 2.0, **kwargs) == (3, True)


def test_a_champion_judged_on_another_score_is_not_compared(logged):
    name = "fedcare-synthetic-mixed"
    registry.register_backbone(logged.run_id, name, 0.7, score_name="validation_auroc")
    with pytest.raises(ValueError, match="judged on"):
        registry.register_backbone(logged.run_id, name, 0.9, score_name="validation_mae")
    with pytest.raises(ValueError, match="judged on"):
        registry.register_backbone(
            logged.run_id, name, 0.9, higher_is_better=False, score_name="validation_auroc"
        )
    assert _champion_version(name) == 1


def test_a_champion_set_by_hand_without_a_score_is_kept(logged):
    name = "fedcare-synthetic-manual"
    registry.register_backbone(logged.run_id, name, 0.5)
    mc = store.client()
    mc.delete_model_version_tag(name, "1", registry.TAG_SCORE)
    assert registry.register_backbone(logged.run_id, name, 0.99) == (2, False)
    assert _champion_version(name) == 1


@pytest.mark.parametrize("score", [math.nan, math.inf])
def test_a_non_finite_score_is_refused(logged, score):
    with pytest.raises(ValueError, match="finite"):
        registry.register_backbone(logged.run_id, "fedcare-synthetic-nan", score)


def test_a_run_without_a_backbone_is_refused(logged):
    exp_id = store.client().get_run(logged.run_id).info.experiment_id
    bare = store.create_child_run(exp_id, parent_run_id=None, run_name="bare", tags={})
    store.finish_run(bare)
    with pytest.raises(ValueError, match="no logged backbone"):
        registry.register_backbone(bare, "fedcare-synthetic-bare", 0.5)


def test_validation_score_is_a_mean_auroc(logged):
    score = registry.validation_score(logged.result)
    assert 0.0 <= score <= 1.0
    mae = registry.validation_score(logged.result, metric="mae_days")
    assert mae > 0
    with pytest.raises(ValueError, match="no objective"):
        registry.validation_score(logged.result, metric="brier")


def test_a_sites_challenger_is_promoted_unless_worse_by_more_than_its_margin(logged):
    from fedcare.tracking.log_run import TAG_BACKBONE_MODEL_ID

    name = "fedcare-synthetic-site-model"
    model_id = store.client().get_run(logged.run_id).data.tags[TAG_BACKBONE_MODEL_ID]
    mc = store.client()

    def register(value, higher=True):
        score = registry.Score(value, "validation_auroc" if higher else "mae", higher)
        return registry.register_version(name, model_id, logged.run_id, score, margin=0.01)

    assert register(0.70) == (1, True)
    assert register(0.695) == (2, True)  # 0.005 worse: within the margin, promoted
    assert register(0.68) == (3, False)  # 0.015 worse than version 2's 0.695: kept
    assert _champion_version(name) == 2
    assert int(mc.get_model_version_by_alias(name, registry.CHALLENGER_ALIAS).version) == 3
    why = mc.get_model_version(name, "3").tags[registry.TAG_PROMOTION]
    assert "0.6800 against the champion's 0.6950 (version 2)" in why
    assert "worse by more than 0.01: kept" in why
    assert "within 0.01: promoted" in mc.get_model_version(name, "2").tags[registry.TAG_PROMOTION]
    assert "first version" in mc.get_model_version(name, "1").tags[registry.TAG_PROMOTION]


def test_a_model_registered_before_its_first_tag_gets_its_tags_again_in_order(logged):
    name = "fedcare-synthetic-test-tag-order"
    store.client().create_registered_model(name, tags={"fedcare.dataset": "synthetic"})
    wanted = {"belongs_to": "client 0 · readmission", "fedcare.dataset": "synthetic"}
    registry.register_backbone(logged.run_id, name, 0.7, model_tags=wanted)
    # The registry list shows a model's first tags in the order they were set.
    assert list(store.client().get_registered_model(name).tags.items()) == list(wanted.items())
    registry.register_backbone(logged.run_id, name, 0.8, model_tags=wanted)  # in order: kept
    assert list(store.client().get_registered_model(name).tags.items()) == list(wanted.items())
