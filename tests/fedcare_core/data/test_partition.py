import pytest

from fedcare_core.data.partition import (
    FeaturePartition,
    at_prediction_time,
    check_prediction_times,
    with_disparity,
)
from fedcare_core.errors import ConfigError

BASE = FeaturePartition(
    common=tuple(f"c{i}" for i in range(20)),
    private={
        "a": tuple(f"a{i}" for i in range(9)),
        "b": tuple(f"b{i}" for i in range(9)),
        "c": tuple(f"l{i}" for i in range(8)),
    },
)


def test_private_for_is_union_of_pools_in_order():
    assert BASE.private_for(("a",)) == BASE.private["a"]
    assert BASE.private_for(("c", "a")) == BASE.private["c"] + BASE.private["a"]


def test_default_ratio_matches_paper_shape():
    assert BASE.disparity_ratio() == pytest.approx(9 / 29)


@pytest.mark.parametrize("rho", [0.4, 0.5])
def test_higher_rho_moves_common_features_into_every_pool(rho):
    out = with_disparity(BASE, rho, seed=3)
    d_u = round(rho * 29)
    moved = set(BASE.common) - set(out.common)
    assert len(out.common) == 29 - d_u
    assert len(moved) == d_u - 9
    for name, pool in out.private.items():
        assert set(BASE.private[name]) | moved == set(pool)
    assert out.disparity_ratio() == pytest.approx(d_u / 29)


@pytest.mark.parametrize("rho", [0.1, 0.2])
def test_lower_rho_moves_private_features_into_common(rho):
    out = with_disparity(BASE, rho, seed=3)
    target = round(rho * 29)
    assert max(len(p) for p in out.private.values()) == target
    # Nothing is lost: every feature is still used somewhere.
    assert set(out.all_features) == set(BASE.all_features)
    # Pools stay disjoint from the common set.
    for pool in out.private.values():
        assert not set(pool) & set(out.common)


def test_disparity_is_seeded():
    assert with_disparity(BASE, 0.5, seed=1) == with_disparity(BASE, 0.5, seed=1)
    assert with_disparity(BASE, 0.5, seed=1).common != with_disparity(BASE, 0.5, seed=2).common


@pytest.mark.parametrize("rho", [0.0, 1.0, -0.2])
def test_invalid_rho_raises(rho):
    with pytest.raises(ConfigError, match="rho"):
        with_disparity(BASE, rho)


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("rho", [0.1, 0.2, 0.3])
def test_private_only_features_never_become_common(rho, seed):
    from fedcare_core.data.diabetes130 import DIABETES130_PARTITION

    out = with_disparity(DIABETES130_PARTITION, rho, seed=seed)
    assert "medical_specialty" not in out.common
    assert "medical_specialty" in out.private["early_discharge"]
    assert out.private_only == ("medical_specialty",)
    assert max(len(p) for p in out.private.values()) == round(rho * 29)


def test_a_pool_that_cannot_shrink_enough_is_refused():
    stuck = FeaturePartition(
        common=("c0", "c1"), private={"a": ("p0", "p1")}, private_only=("p0", "p1")
    )
    with pytest.raises(ConfigError, match="only 0 may be shared"):
        with_disparity(stuck, 0.3)


def test_shrinking_skips_private_only_but_keeps_other_pools_choice():
    marked = FeaturePartition(BASE.common, BASE.private, private_only=("a0", "a1"))
    plain = with_disparity(BASE, 0.1, seed=5)
    out = with_disparity(marked, 0.1, seed=5)
    assert {"a0", "a1"} <= set(out.private["a"])
    assert out.private["b"] == plain.private["b"] and out.private["c"] == plain.private["c"]


TIMES = {
    **{f"c{i}": "admission" for i in range(3)},
    "c3": "stay",
    "c4": "discharge",
    "a0": "admission",
    "a1": "stay",
    "a2": "discharge",
    "b0": "stay",
    "l0": "admission",
}
SMALL = FeaturePartition(
    common=("c0", "c1", "c2", "c3", "c4"),
    private={"a": ("a0", "a1", "a2"), "b": ("b0",), "c": ("l0",)},
)
PREDICTED = {"a": "admission", "b": "discharge", "c": "stay"}


def test_prediction_time_keeps_early_common_features_and_moves_late_ones_to_late_pools():
    p = at_prediction_time(SMALL, TIMES, PREDICTED)
    assert p.common == ("c0", "c1", "c2")
    # a (admission): its own admission-time feature only; a1, a2 dropped (no one else held them)
    assert p.private["a"] == ("a0",)
    # b (discharge): its pool, then the later common features
    assert p.private["b"] == ("b0", "c3", "c4")
    # c (stay): sees the stay-time common feature, not the discharge-time one
    assert p.private["c"] == ("l0", "c3")
    check_prediction_times(p, TIMES, PREDICTED)


def test_a_declared_move_joins_the_pool_and_must_respect_the_time():
    p = at_prediction_time(SMALL, TIMES, PREDICTED, moves={"b": ("a2",)})
    assert p.private["b"] == ("b0", "c3", "c4", "a2")
    with pytest.raises(ConfigError, match=r"'c' is predicted at stay but would see a2 \(known at"):
        at_prediction_time(SMALL, TIMES, PREDICTED, moves={"c": ("a2",)})


def test_a_partition_showing_a_late_feature_is_refused():
    with pytest.raises(ConfigError, match=r"'a' is predicted at admission but would see c3"):
        check_prediction_times(SMALL, TIMES, PREDICTED)


@pytest.mark.parametrize(
    ("times", "predicted", "message"),
    [
        ({k: v for k, v in TIMES.items() if k != "b0"}, PREDICTED, r"feature\(s\) b0"),
        (TIMES, {"a": "admission", "b": "discharge"}, r"objective\(s\) c"),
        ({**TIMES, "c0": "later"}, PREDICTED, r"unknown time\(s\) c0='later'"),
    ],
)
def test_missing_or_unknown_times_are_refused(times, predicted, message):
    with pytest.raises(ConfigError, match=message):
        at_prediction_time(SMALL, times, predicted)
