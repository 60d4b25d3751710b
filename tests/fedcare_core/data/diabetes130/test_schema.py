"""The file schema, the feature set and the default partition."""

from __future__ import annotations

import pytest

from fedcare_core.data.diabetes130 import (
    DIABETES130_COLUMNS,
    DIABETES130_FEATURES,
    DIABETES130_PARTITION,
    EXCLUDED_COLUMNS,
)
from tests.fedcare_core.data.diabetes130.helpers import N_FIXTURE_ROWS, fixture_lines


def test_fixture_has_real_header() -> None:
    assert fixture_lines()[0].split(",") == list(DIABETES130_COLUMNS)
    assert len(DIABETES130_COLUMNS) == 50
    assert len(fixture_lines()) == N_FIXTURE_ROWS + 1


def test_partition_matches_paper_split() -> None:
    p = DIABETES130_PARTITION
    assert len(p.common) == 20
    assert {k: len(v) for k, v in p.private.items()} == {
        "early_discharge": 9,
        "readmission": 9,
        "los": 8,
    }
    assert list(p.private) == ["early_discharge", "readmission", "los"]
    pools = [set(p.common), *(set(v) for v in p.private.values())]
    assert sum(len(s) for s in pools) == 46
    assert set().union(*pools) == set(DIABETES130_FEATURES)
    assert set(p.all_features) == set(DIABETES130_FEATURES)
    assert not set(p.all_features) & set(EXCLUDED_COLUMNS)
    for name in ("examide", "citoglipton", "metformin-rosiglitazone"):
        assert name in p.private["los"]
    assert p.disparity_ratio() == pytest.approx(9 / 29)
