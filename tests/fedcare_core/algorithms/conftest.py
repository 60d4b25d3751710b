"""Fixtures of the baseline tests: a small synthetic federation and its union view."""

from __future__ import annotations

import pytest

from fedcare_core.algorithms.union.features import union_federation
from fedcare_core.config import DataConfig
from fedcare_core.data.clients import Federation, build_federation
from tests.fedcare_core.synthetic import PARTITION, make_cohort


@pytest.fixture(scope="module")
def federation() -> Federation:
    """Four clients over 240 synthetic patients (every objective covered)."""
    return build_federation(make_cohort(240), PARTITION, DataConfig(clients=4), seed=0)


@pytest.fixture(scope="module")
def union(federation: Federation) -> Federation:
    """The union view of :func:`federation`."""
    return union_federation(federation)[0]


@pytest.fixture(scope="module")
def roomy() -> Federation:
    """Three clients over 500 synthetic patients: enough validation patients to cross-fit."""
    return build_federation(make_cohort(500), PARTITION, DataConfig(clients=3), seed=0)
