"""The accountants: ε of composed Gaussian rounds (exact PLD, RDP) and the noise for a budget."""

from __future__ import annotations

import itertools
import math

import dp_accounting
import pytest
from dp_accounting.pld import PLDAccountant
from dp_accounting.rdp import RdpAccountant

from fedcare_core.config import Stage1Config
from fedcare_core.errors import ConfigError
from fedcare_core.privacy.accountants import ACCOUNTANTS, epsilon_spent, noise_for_budget

_ADD_OR_REMOVE = dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE


def _composed(accountant, z, rounds):
    accountant.compose(dp_accounting.GaussianDpEvent(z), rounds)
    return accountant.get_epsilon(1e-5)


def test_rdp_is_the_installed_rdp_accountant_for_composed_gaussian_rounds():
    expected = _composed(RdpAccountant(neighboring_relation=_ADD_OR_REMOVE), 1.3, 12)
    assert epsilon_spent(1.3, 12, 1e-5, "rdp") == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(("z", "rounds"), [(1.3, 12), (6.38, 100), (0.8, 3), (20.0, 300)])
def test_pld_agrees_with_the_discretised_pld_accountant_and_is_never_above_it(z, rounds):
    discretised = _composed(PLDAccountant(_ADD_OR_REMOVE), z, rounds)
    exact = epsilon_spent(z, rounds, 1e-5, "pld")
    assert exact <= discretised and exact == pytest.approx(discretised, rel=2e-3)


@pytest.mark.parametrize("accountant", ACCOUNTANTS)
def test_epsilon_starts_at_zero_and_grows_with_every_round(accountant):
    spent = [epsilon_spent(1.3, t, 1e-5, accountant) for t in range(0, 13)]
    assert spent[0] == 0.0 and all(b > a for a, b in itertools.pairwise(spent))


@pytest.mark.parametrize(("z", "rounds"), [(6.0, 100), (1.0, 10), (2.0, 30), (0.7, 300)])
def test_pld_spends_less_than_rdp_for_the_same_noise(z, rounds):
    pld, rdp = (epsilon_spent(z, rounds, 1e-5, name) for name in ACCOUNTANTS)
    assert 0 < pld < rdp


@pytest.mark.parametrize("accountant", ACCOUNTANTS)
@pytest.mark.parametrize(("epsilon", "rounds"), [(1.0, 20), (3.0, 20), (8.0, 100)])
def test_the_derived_noise_multiplier_meets_the_budget_tightly(accountant, epsilon, rounds):
    z = noise_for_budget(epsilon, 1e-5, rounds, accountant)
    assert epsilon_spent(z, rounds, 1e-5, accountant) <= epsilon
    assert epsilon_spent(z * 0.999, rounds, 1e-5, accountant) > epsilon  # not more than needed


def test_pld_needs_less_noise_for_the_same_budget():
    pld, rdp = (noise_for_budget(8.0, 1e-5, 100, name) for name in ACCOUNTANTS)
    assert pld < rdp and pld == pytest.approx(6.0023, abs=1e-3)


def test_the_smallest_noise_multiplier_gives_a_finite_epsilon_without_exhausting_memory():
    assert math.isfinite(epsilon_spent(1e-3, 1000, 1e-5, "pld"))


def test_the_config_names_its_accountant_and_refuses_an_unknown_one():
    assert Stage1Config(dp_noise_multiplier=2.0).privacy().accountant == "pld"
    assert Stage1Config(dp_noise_multiplier=2.0, dp_accountant="rdp").privacy().accountant == "rdp"
    with pytest.raises(ConfigError, match="dp_accountant"):
        Stage1Config(dp_accountant="moments").validate()
    # A budget binds the accountant named: PLD's noise for ε = 3 over 20 rounds spends more by RDP.
    z = noise_for_budget(3.0, 1e-5, 20, "pld")
    Stage1Config(rounds=20, dp_epsilon=3.0, dp_noise_multiplier=z).validate()
    with pytest.raises(ConfigError, match="rdp"):
        Stage1Config(
            rounds=20, dp_epsilon=3.0, dp_noise_multiplier=z, dp_accountant="rdp"
        ).validate()


@pytest.mark.parametrize("accountant", ACCOUNTANTS)
def test_rounds_of_differing_noise_compose_as_identical_rounds_when_equal(accountant):
    from fedcare_core.privacy.accountants import epsilon_of_rounds

    same = epsilon_of_rounds([2.0] * 30, 1e-5, accountant)
    assert same == pytest.approx(epsilon_spent(2.0, 30, 1e-5, accountant), rel=1e-9)
    weaker = epsilon_of_rounds([2.0] * 29 + [1.0], 1e-5, accountant)
    assert weaker > same and epsilon_of_rounds([], 1e-5, accountant) == 0.0


def test_the_sites_noise_is_accounted_against_the_server_too():
    from fedcare_core.privacy.mechanism import privacy_record

    settings = Stage1Config(rounds=10, dp_noise_multiplier=3.0).privacy()
    central = privacy_record(settings, 10)
    assert central["noise_added_by"] == "server" and "epsilon_against_server" not in central
    every = privacy_record(settings, 10, noise_sites=3, contributors=[3] * 10)
    assert every["epsilon_against_server"] == pytest.approx(every["epsilon"], rel=1e-9)
    assert str(every["noise_added_by"]).startswith("sites")
    dropped = privacy_record(settings, 10, noise_sites=3, contributors=[3] * 9 + [2])
    assert dropped["epsilon_against_server"] > dropped["epsilon"] == every["epsilon"]
