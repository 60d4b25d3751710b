"""Each client's model registered on its own; ``champion`` moves only when its score improves."""

from __future__ import annotations

import pytest

from fedcare_tracking import client_registry, registry, store
from fedcare_tracking.registry import Score

pytestmark = pytest.mark.filterwarnings("ignore:No complete tensor found:UserWarning")


def test_client_scores():
    assert client_registry.client_score({("readmission", "auroc"): 0.6}) == Score(
        0.6, "validation auroc of readmission", True
    )
    both = client_registry.client_score(
        {("a", "auroc"): 0.6, ("b", "auroc"): 0.8, ("c", "mae_days"): 2}
    )
    assert both is not None and both.value == pytest.approx(0.7) and both.higher_is_better
    los = client_registry.client_score({("los", "mae_days"): 2.5})
    assert los == Score(2.5, "validation mae_days of los", False)
    assert client_registry.client_score({("readmission", "auroc"): None}) is None


def test_each_client_gets_its_model_with_its_metrics(logged):
    regs = client_registry.register_client_models(logged.result, logged.run_id)
    fed = logged.result.federation
    assert [r.client for r in regs] == [c.client_id for c in fed.clients]
    mc = store.client()
    for reg, client in zip(regs, fed.clients, strict=True):
        assert reg.model_name == f"fedcare-synthetic-fedcare-client{client.client_id}"
        version = mc.get_model_version(reg.model_name, str(reg.version))
        assert version.run_id == logged.run_id
        assert version.tags["fedcare.objectives"] == ",".join(client.objectives)
        for s in client.objectives:
            metric = "auroc" if fed.objective(s).kind == "binary" else "mae_days"
            assert f"fedcare.val.{s}.{metric}" in version.tags
            test = logged.doc["objectives"][s]["clients"]
            value = next(c["value"] for c in test if c["client"] == client.client_id)
            assert version.tags[f"fedcare.test.{s}.{metric}"] == repr(float(value))
            assert f"| {s} |" in version.description
        assert registry.champion(reg.model_name) is not None


def test_champion_moves_only_for_a_better_client_score(logged):
    mc = store.client()
    model_id = mc.get_run(logged.run_id).data.tags["fedcare.client_model_id.0"]
    name = "fedcare-synthetic-test-client0"
    auroc = "validation auroc of readmission"
    assert registry.register_version(name, model_id, logged.run_id, Score(0.6, auroc)) == (1, True)
    assert registry.register_version(name, model_id, logged.run_id, Score(0.6, auroc)) == (2, False)
    assert registry.register_version(name, model_id, logged.run_id, Score(0.7, auroc)) == (3, True)
    # Another seed drew this client other objectives: registered, not compared, not promoted.
    other = Score(0.9, "validation mae_days of los", False)
    version, promoted = registry.register_version(
        name, model_id, logged.run_id, other, other_score="keep"
    )
    assert (version, promoted) == (4, False)
    assert "was judged on" in mc.get_model_version(name, "4").tags[registry.TAG_NOT_COMPARED]
    assert int(registry.champion(name).version) == 3
    with pytest.raises(ValueError, match="was judged on"):
        registry.register_version(name, model_id, logged.run_id, other)
