"""Each client's model registered on its own; ``champion`` moves only when its score improves."""

from __future__ import annotations

import dataclasses
import re

import pytest

from fedcare.tracking import client_registry, registry, store
from fedcare.tracking.registry import Score
from fedcare_core.errors import ConfigError

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
    run_metrics = mc.get_run(logged.run_id).data.metrics
    for reg, client in zip(regs, fed.clients, strict=True):
        # Named by what it predicts (objectives sorted, joined by '+') and whom it serves.
        objectives = "+".join(sorted(client.objectives))
        assert reg.model_name == f"fedcare-synthetic-fedcare-{objectives}-client{client.client_id}"
        model = mc.get_registered_model(reg.model_name)
        outputs = [
            f"{s}_probability" if fed.objective(s).kind == "binary" else f"{s}_days"
            for s in client.objectives
        ] + [  # then each length-of-stay objective's interval ends
            f"{s}_days_{end}"
            for s in client.objectives
            if fed.objective(s).kind == "regression"
            for end in ("low", "high")
        ]
        label = "+".join(sorted(client.objectives))
        assert list(model.tags)[:3] == ["belongs_to", "fedcare.objectives", "fedcare.algorithm"]
        assert model.tags == {
            "belongs_to": f"client {client.client_id} · {label}",
            "fedcare.dataset": "synthetic",
            "fedcare.algorithm": "fedcare",
            "fedcare.objectives": ",".join(sorted(client.objectives)),
            "fedcare.outputs": ",".join(outputs),
            "fedcare.model": "client",
            "fedcare.client": str(client.client_id),
            "fedcare.input": "raw rows",
        }
        assert model.description.startswith(
            f"Predicts {', '.join(f'`{c}`' for c in outputs)} for client {client.client_id} "
        )
        assert all(f"| `{c}` |" in model.description for c in outputs)
        assert f"models:/{reg.model_name}@champion" in model.description
        version = mc.get_model_version(reg.model_name, str(reg.version))
        assert version.run_id == logged.run_id
        assert version.tags["fedcare.objectives"] == ",".join(client.objectives)
        for s in client.objectives:
            metric = "auroc" if fed.objective(s).kind == "binary" else "mae_days"
            assert f"fedcare.val.{s}.{metric}" in version.tags
            test = logged.doc["objectives"][s]["clients"]
            value = next(c["value"] for c in test if c["client"] == client.client_id)
            # Four decimals for people; the run's metric keeps every digit.
            assert version.tags[f"fedcare.test.{s}.{metric}"] == f"{value:.4f}"
            key = f"test_by_client/{s}.{metric}.client{client.client_id}"
            assert run_metrics[key] == pytest.approx(value, rel=1e-12)
            assert f"| {s} |" in version.description
        shown = [
            v for k, v in version.tags.items() if k.startswith(("fedcare.val.", "fedcare.test."))
        ]
        numbers = re.findall(r"\d+\.\d+", " ".join(shown) + version.description)
        assert numbers and all(len(n.split(".")[1]) <= 4 for n in numbers)
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


def test_a_site_registers_its_one_model_under_its_name(logged):
    result = logged.result
    report = registry.validation_report(result)  # of the whole run: the site keeps client 1
    fed = result.federation
    site_run = dataclasses.replace(
        result, federation=dataclasses.replace(fed, clients=fed.clients[1:2])
    )
    regs = client_registry.register_client_models(
        site_run, logged.run_id, report, site_name="st-mary"
    )
    objectives = "+".join(sorted(fed.clients[1].objectives))
    name = f"fedcare-synthetic-fedcare-{objectives}-st-mary"
    assert [(r.client, r.model_name) for r in regs] == [(1, name)]
    version = store.client().get_model_version(regs[0].model_name, str(regs[0].version))
    assert version.tags["fedcare.site"] == "st-mary" and version.tags["fedcare.client"] == "1"
    assert version.description.startswith("Site st-mary (client 1)'s deployed model: fedcare")
    model = store.client().get_registered_model(name)
    assert model.tags["fedcare.model"] == "site" and model.tags["fedcare.site"] == "st-mary"
    assert "fedcare.client" not in model.tags  # a site's client number is the federation's
    assert " for the site st-mary of a FedCARE federation " in model.description
    with pytest.raises(ValueError, match="a site's run has one client"):
        client_registry.register_client_models(result, logged.run_id, report, site_name="x")


@pytest.mark.parametrize("site", ["backbone", "client0", "client12"])
def test_a_site_name_that_is_another_models_is_refused(site):
    with pytest.raises(ConfigError, match=f"site name '{site}' would register its model"):
        client_registry.site_model_name("diabetes130", "fedcare", ["los"], site)
    assert client_registry.site_model_name(
        "diabetes130", "fedcare", ["readmission", "los"], "clients"
    ) == ("fedcare-diabetes130-fedcare-los+readmission-clients")


def test_a_client_drawn_other_objectives_gets_another_model(logged):
    """Another seed's draw of client 0: its own registered model, its own champion."""
    result = logged.result
    fed = result.federation
    drawn = tuple(o.name for o in fed.objectives if o.name not in fed.clients[0].objectives)
    assert drawn, "the synthetic federation gives client 0 fewer than all objectives"
    first = client_registry.register_client_models(result, logged.run_id)[0]
    other = client_registry.client_model_name("synthetic", "fedcare", drawn, 0)
    assert first.model_name != other
    assert all(s in first.model_name for s in fed.clients[0].objectives)
