"""The MIMIC-III feature set and its default partition."""

from __future__ import annotations

import pytest

from fedcare_core.data.mimic3 import (
    CATEGORICAL_FEATURES,
    MIMIC3_FEATURES,
    MIMIC3_PARTITION,
    NUMERIC_FEATURES,
)
from tests.fedcare_core.data.mimic3.helpers import VITALS


def test_feature_set_and_partition() -> None:
    assert len(MIMIC3_FEATURES) == 46 == len(set(MIMIC3_FEATURES))
    assert set(NUMERIC_FEATURES) | set(CATEGORICAL_FEATURES) == set(MIMIC3_FEATURES)
    assert not set(NUMERIC_FEATURES) & set(CATEGORICAL_FEATURES)
    p = MIMIC3_PARTITION
    assert len(p.common) == 19
    assert list(p.private) == ["mortality", "readmission", "los"]
    pools = [set(v) for v in p.private.values()]
    assert all(len(pool) == 9 for pool in pools)
    everything = [*p.common, *(f for v in p.private.values() for f in v)]
    assert len(everything) == len(set(everything)) == 46  # disjoint
    assert set(everything) == set(MIMIC3_FEATURES)
    assert p.disparity_ratio() == pytest.approx(9 / 28)
    # Every pool keeps lab features, so it stays informative without CHARTEVENTS.
    for pool in pools:
        assert len(pool - set(VITALS)) >= 3
