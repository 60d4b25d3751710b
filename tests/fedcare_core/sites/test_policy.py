"""A site's policy: every rule decided on a run's terms, and a bad file refused by name."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from fedcare_core.errors import ConfigError
from fedcare_core.privacy.accountants import epsilon_spent
from fedcare_core.sites.policy import RunTerms, SitePolicy, check_terms, read_policy

TERMS = RunTerms("r1", "fedcare", ("los", "readmission"), 100, False, 6.0, 1e-5)


def test_each_rule_refuses_what_breaks_it_and_admits_what_keeps_it():
    assert check_terms(SitePolicy(), TERMS) is None
    cases = {
        SitePolicy(require_secagg=True): "require_secagg",
        SitePolicy(max_rounds=99): "max_rounds",
        SitePolicy(objectives=("los",)): "objectives",
        SitePolicy(max_epsilon=7.9): "max_epsilon",
        SitePolicy(max_delta=1e-6): "max_delta",
    }
    for policy, rule in cases.items():
        refusal = check_terms(policy, TERMS)
        assert refusal is not None and refusal.rule == rule
    spent = epsilon_spent(6.0, 100, 1e-5, "pld")
    assert check_terms(SitePolicy(max_epsilon=spent + 1e-9), TERMS) is None
    # The cap binds the accountant the site names: RDP's ε of the same noise is higher.
    refusal = check_terms(SitePolicy(max_epsilon=spent + 1e-9, accountant="rdp"), TERMS)
    assert refusal is not None and "rdp" in refusal.reason
    no_dp = RunTerms("r1", "fedcare", ("los",), 100, True)
    assert math.isinf(no_dp.epsilon("pld"))
    assert "no differential privacy" in check_terms(SitePolicy(max_epsilon=8), no_dp).reason


def test_terms_round_trip_and_their_digest_ignores_the_name():
    again = RunTerms.from_json(TERMS.to_json())
    assert again == TERMS
    renamed = RunTerms("another", *list(TERMS.__dict__.values())[1:])
    assert renamed.digest() == TERMS.digest()
    assert RunTerms("r1", "fedcare", ("los",), 100, False, 6.0, 1e-5).digest() != TERMS.digest()
    with pytest.raises(ValueError, match="unexpected fields"):
        RunTerms.from_json('{"run_name": "x"}')


def test_a_policy_file_is_read_strictly_naming_the_file_and_key(tmp_path: Path):
    path = tmp_path / "policy.yaml"
    assert read_policy(path) is None
    path.write_text("require_secagg: true\nmax_epsilon: 8\nobjectives: [los]\nmax_rounds: 50\n")
    assert read_policy(path) == SitePolicy(
        require_secagg=True, max_epsilon=8.0, objectives=("los",), max_rounds=50
    )
    for text, message in (
        ("require_secagg: yes please\n", "require_secagg must be true or false"),
        ("max_epsilon: -1\n", "max_epsilon must be a positive number"),
        ("max_delta: 1.5\n", "max_delta must be in (0, 1)"),
        ("max_rounds: 2.5\n", "max_rounds must be a whole number"),
        ("accountant: moments\n", "accountant must be one of pld, rdp"),
        ("objectives: los\n", "objectives must be a non-empty list of objective names"),
        ("objectives: []\n", "objectives must be a non-empty list"),
        ("require_secag: true\n", "unknown key(s) require_secag"),
        ("- a\n- b\n", "a mapping of rules"),
        ("a: [\n", "not readable YAML"),
    ):
        path.write_text(text)
        with pytest.raises(ConfigError) as info:
            read_policy(path)
        assert str(path) in str(info.value) and message in str(info.value), text
