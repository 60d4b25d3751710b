"""The dataset's experiment carries saved runs-table views and a description."""

from __future__ import annotations

import json

import pytest

from fedcare.tracking import store, summary, views

pytestmark = [
    pytest.mark.filterwarnings("ignore:No complete tensor found:UserWarning"),
    pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy:DeprecationWarning"),
]


def _view(experiment_id: str, view_id: str) -> tuple[dict[str, object], list[str]]:
    """The saved view's envelope and columns, parsed as the MLflow UI parses them."""
    tags = store.client().get_experiment(experiment_id).tags
    envelope = json.loads(tags[views.VIEW_TAG_PREFIX + view_id])
    assert isinstance(envelope["name"], str) and isinstance(envelope["createdAt"], int)
    assert isinstance(envelope["state"], str)
    return envelope, json.loads(envelope["state"])["selectedColumns"]


def test_a_logged_run_publishes_the_test_metrics_view_and_the_description(logged):
    mc = store.client()
    experiment_id = mc.get_run(logged.run_id).info.experiment_id
    envelope, columns = _view(experiment_id, views.RUNS_VIEW)
    assert envelope["name"] == "FedCARE: test metrics"
    assert columns[:3] == [
        "tags.`fedcare.setting`",
        "params.`data.clients`",
        "params.`stage1.rounds`",
    ]
    metrics = mc.get_run(logged.run_id).data.metrics
    for objective, rep in logged.doc["objectives"].items():
        for field in ("pooled", "mean_over_clients"):
            key = f"test/{objective}.{rep['metric']}.{field}"
            assert f"metrics.`{key}`" in columns
            assert key in metrics or rep[field] is None  # every column names a logged metric
    note = mc.get_experiment(experiment_id).tags[views.NOTE_TAG]
    assert "mae_days" in note and "test_over_seeds/" in note


def test_the_seeds_view_follows_the_parent_summary(logged):
    mc = store.client()
    experiment_id = mc.get_run(logged.parent_id).info.experiment_id
    values = summary.log_parent_summary(logged.parent_id)
    _, columns = _view(experiment_id, views.SEEDS_VIEW)
    # Other tests' parents in this experiment may have added columns before: only growth.
    assert {f"metrics.`{k}`" for k in values if ".pooled." in k} <= set(columns)
    assert not [c for c in columns if ".mean_over_clients." in c or c.endswith("seeds`")]
    # The parent's LOS summary is a column, whatever its group is named: "fedcare", or
    # "fedcare-K3-..." once other tests logged other settings under the same parent.
    los = [k for k in values if k.startswith("test_over_seeds/fedcare")]
    los = [k for k in los if k.endswith("/los.mae_days.pooled.mean")]
    assert los and all(f"metrics.`{k}`" in columns for k in los)


def test_view_columns_only_grow_and_an_unchanged_view_is_not_rewritten():
    first = views.view_tag(views.RUNS_VIEW, ["a", "b"], None, 1)
    assert first is not None
    assert views.view_tag(views.RUNS_VIEW, ["b", "a"], first, 2) is None
    grown = views.view_tag(views.RUNS_VIEW, ["c"], first, 3)
    assert grown is not None
    envelope = json.loads(grown)
    assert (envelope["createdAt"], envelope["updatedAt"]) == (1, 3)
    assert json.loads(envelope["state"])["selectedColumns"] == ["a", "b", "c"]
    assert views.view_tag(views.RUNS_VIEW, ["x"], "not json", 4) is not None


def test_a_new_experiment_is_created_with_the_description(logged):
    experiment_id = store.experiment_for("described")
    assert store.client().get_experiment(experiment_id).tags[views.NOTE_TAG] == views.DESCRIPTION


def test_an_outdated_fedcare_description_is_refreshed_a_persons_is_kept(logged):
    mc = store.client()
    experiment_id = store.experiment_for("described-before")
    mc.set_experiment_tag(experiment_id, views.NOTE_TAG, "FedCARE runs. The old names.")
    views.publish(mc, experiment_id, views.RUNS_VIEW, ["a"])
    assert mc.get_experiment(experiment_id).tags[views.NOTE_TAG] == views.DESCRIPTION
    mc.set_experiment_tag(experiment_id, views.NOTE_TAG, "Ours: the weekly re-training.")
    views.publish(mc, experiment_id, views.RUNS_VIEW, ["b"])
    assert mc.get_experiment(experiment_id).tags[views.NOTE_TAG] == "Ours: the weekly re-training."
    assert "seed<k> · <setting>" in views.DESCRIPTION and "lambda/<objective>" in views.DESCRIPTION
