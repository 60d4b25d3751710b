"""Clinical preferences: their syntax, their losses and the subgroup gap (issue 31)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedcare_core.config.preferences import (
    Preference,
    decision_threshold,
    parse_preference,
    parse_preferences,
)
from fedcare_core.objectives import make_loss
from fedcare_core.objectives.losses import subgroup_gap


def test_a_list_of_preferences_parses_with_spaces_commas_and_a_wildcard():
    stated = parse_preferences(
        "readmission: fair( race , sensitivity ),mortality:sensitivity  los:plain *:fair(sex)",
        sensitivity_weight=3.0,
        fairness_weight=0.5,
    )
    assert stated == {
        "readmission": Preference("fair", 0.5, "race", "sensitivity"),
        "mortality": Preference("sensitivity", 3.0),
        "*": Preference("fair", 0.5, "sex", "auroc"),
    }
    assert [p.label for p in stated.values()] == [
        "fair(race,sensitivity)",
        "sensitivity",
        "fair(sex)",
    ]
    assert parse_preferences("") == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("readmission", "is not <objective>:<preference>"),
        ("readmission:fair", "names a sensitive attribute"),
        ("readmission:fair(race,brier)", "the metric is one of auroc, sensitivity"),
        ("mortality:sensitivity(race)", "takes no attribute"),
        ("mortality:recall", "unknown preference 'recall'"),
        ("mortality:plain mortality:sensitivity", "more than one preference"),
        ("mortality:sensitivity oops", "'oops' is not"),
        ("readmission:fair(race", "unbalanced parentheses"),
    ],
)
def test_a_malformed_preference_is_refused_saying_what_is_wrong(text, message):
    with pytest.raises(ValueError, match=message):
        parse_preferences(text)


def test_a_preference_round_trips_through_its_dict():
    objective, preference = parse_preference(
        "x:fair(age)", sensitivity_weight=2.0, fairness_weight=4.0
    )
    assert objective == "x"
    assert Preference.from_dict(preference.to_dict()) == preference
    with pytest.raises(ValueError, match="positive"):
        Preference("sensitivity", 0.0)


def test_a_sensitivity_preference_weights_positives_beta_times_more():
    labels = np.array([1, 0, 0, 0, np.nan], dtype=np.float32)
    plain = make_loss("binary", labels)
    preferred = make_loss("binary", labels, Preference("sensitivity", 2.5))
    assert plain.pos_weight == pytest.approx(3.0)
    assert preferred.pos_weight == pytest.approx(7.5)
    assert decision_threshold(plain.pos_weight) == pytest.approx(0.25)
    assert decision_threshold(preferred.pos_weight) < decision_threshold(plain.pos_weight)
    score = torch.tensor([-1.0, 0.5, -0.2, 0.1])
    target = torch.tensor([1.0, 0.0, 0.0, 0.0])
    assert float(preferred(score, target)) > float(plain(score, target))


def test_the_subgroup_gap_is_the_spread_of_each_groups_ranking_probability():
    # Group 0 ranks every positive above every negative; group 1 ranks them the wrong way.
    pos, neg = torch.full((5,), 4.0), torch.full((5,), -4.0)
    score = torch.cat([pos, neg, neg, pos])
    target = torch.cat([torch.ones(5), torch.zeros(5), torch.ones(5), torch.zeros(5)])
    groups = torch.cat([torch.zeros(10), torch.ones(10)]).long()

    def sigmoid(v: float) -> float:
        return 1.0 / (1.0 + np.exp(-v))

    gap = float(subgroup_gap(score, target, groups, "auroc"))
    spread = 4.0 + 1e-3  # each subgroup's scores are ±4: a standard deviation of 4
    assert gap == pytest.approx(sigmoid(8.0 / spread) - sigmoid(-8.0 / spread))
    # Widening one subgroup's scores does not narrow the gap: it ranks no better.
    wider = torch.cat([score[:10], 3.0 * score[10:]])
    assert float(subgroup_gap(wider, target, groups, "auroc")) == pytest.approx(gap, rel=1e-3)
    sens_gap = float(subgroup_gap(score, target, groups, "sensitivity"))
    assert sens_gap == pytest.approx(sigmoid(4.0) - sigmoid(-4.0))
    # Missing (-1) rows and groups with too few positives take no part.
    groups[10:] = -1
    assert float(subgroup_gap(score, target, groups, "auroc")) == 0.0


def test_descending_a_fairness_loss_narrows_the_gap_it_penalises():
    gen = torch.Generator().manual_seed(0)
    n = 400
    groups = (torch.rand(n, generator=gen) < 0.5).long()
    target = (torch.rand(n, generator=gen) < 0.3).float()
    # A feature that separates the classes well in group 0 and hardly in group 1.
    x = target * (1.0 + 2.0 * (groups == 0)) + torch.randn(n, generator=gen)
    labels = target.numpy()

    def trained(preference: Preference | None) -> float:
        torch.manual_seed(0)
        w = torch.zeros(3, requires_grad=True)
        loss_fn = make_loss("binary", labels, preference)
        opt = torch.optim.SGD([w], lr=0.2)
        features = torch.stack([x, x * (groups == 1), torch.ones(n)], dim=1)
        for _ in range(300):
            opt.zero_grad()
            loss_fn(features @ w, target, groups).backward()
            opt.step()
        return float(subgroup_gap((features @ w).detach(), target, groups, "auroc"))

    plain = trained(None)
    fair = trained(Preference("fair", 5.0, "g", "auroc"))
    assert fair < plain


def test_a_fairness_loss_without_the_rows_subgroups_is_refused():
    loss = make_loss(
        "binary", np.array([0, 1], dtype=np.float32), Preference("fair", 1.0, "race", "auroc")
    )
    assert loss.attribute == "race"
    with pytest.raises(ValueError, match="needs the rows' subgroups"):
        loss(torch.zeros(2), torch.tensor([0.0, 1.0]))


def test_a_sites_objectives_split_on_commas_outside_parentheses():
    from fedcare_core.config.preferences import site_objectives, split_objectives

    items = split_objectives("mortality:sensitivity, readmission:fair(race,sensitivity),los,")
    assert items == ["mortality:sensitivity", "readmission:fair(race,sensitivity)", "los", ""]
    names, stated = site_objectives(items[:3], sensitivity_weight=2.0, fairness_weight=1.0)
    assert names == ["mortality", "readmission", "los"]
    assert set(stated) == {"mortality", "readmission"}
