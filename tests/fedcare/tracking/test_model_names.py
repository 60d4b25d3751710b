"""Registered models named by what they predict and whom they serve, with tags and a description."""

from __future__ import annotations

import pytest

from fedcare.tracking import model_names
from fedcare_core.errors import ConfigError


def test_names_say_what_a_model_predicts_in_a_fixed_order():
    one = model_names.client_model_name("diabetes130", "fedcare-b", ["readmission"], 3)
    assert one == "fedcare-diabetes130-fedcare-b-readmission-client3"
    a = model_names.client_model_name("mimic3", "fedavg", ["readmission", "mortality"], 0)
    b = model_names.client_model_name("mimic3", "fedavg", ["mortality", "readmission"], 0)
    assert a == b == "fedcare-mimic3-fedavg-mortality+readmission-client0"
    assert model_names.backbone_model_name("diabetes130", "fedcare", ["los", "readmission"]) == (
        "fedcare-diabetes130-fedcare-los+readmission-backbone"
    )
    assert model_names.site_model_name("diabetes130", "fedcare", ["los"], "north") == (
        "fedcare-diabetes130-fedcare-los-north"
    )
    with pytest.raises(ValueError, match="at least one objective"):
        model_names.client_model_name("mimic3", "fedavg", [], 0)


@pytest.mark.parametrize("site", ["backbone", "client0", "client12"])
def test_a_site_name_that_would_be_another_models_is_refused(site):
    with pytest.raises(ConfigError, match=f"site name '{site}' would register its model"):
        model_names.check_site_name(site)
    model_names.check_site_name("clients")  # not a client's name
    model_names.check_site_name("client-b")


def test_the_cards_say_what_is_predicted_for_whom_from_what(logged):
    result = logged.result
    fed = result.federation
    client = fed.clients[1]
    (objective,) = client.objectives  # the synthetic federation: one objective per client
    binary = fed.objective(objective).kind == "binary"
    # A length-of-stay model also outputs its prediction interval's ends.
    columns = (
        [f"{objective}_probability"]
        if binary
        else [f"{objective}_days", f"{objective}_days_low", f"{objective}_days_high"]
    )
    card = model_names.client_card(result, client)
    assert card.name == f"fedcare-synthetic-fedcare-{objective}-client1"
    assert card.tags[model_names.TAG_OUTPUTS] == ",".join(columns)
    assert card.tags[model_names.TAG_MODEL] == "client" and card.tags["fedcare.client"] == "1"
    listed = ", ".join(f"`{c}`" for c in columns)
    assert card.description.startswith(f"Predicts {listed} for client 1 of a FedCARE ")
    assert all(f"| `{c}` | {objective} |" in card.description for c in columns)
    assert "raw rows of the synthetic dataset" in card.description  # an unknown dataset's rows
    site = model_names.client_card(result, client, "st-mary")
    assert site.name == f"fedcare-synthetic-fedcare-{objective}-st-mary"
    assert site.tags[model_names.TAG_SITE] == "st-mary" and "fedcare.client" not in site.tags
    backbone = model_names.backbone_card(result)
    names = sorted(fed.objective_names)
    assert backbone.name == f"fedcare-synthetic-fedcare-{'+'.join(names)}-backbone"
    assert backbone.tags[model_names.TAG_OBJECTIVES] == ",".join(names)
    assert backbone.tags[model_names.TAG_INPUT] == "encoded common features"
    for o in fed.objectives:
        assert f"| {o.name} |" in backbone.description
