from dataclasses import replace

import numpy as np

from fedcare_core.algorithms.union.features import union_federation, union_layout
from fedcare_core.config import DataConfig
from fedcare_core.data.clients import SPLITS, build_federation
from fedcare_core.data.subgroups import SensitiveAttribute
from tests.fedcare_core.synthetic import PARTITION, make_cohort


def test_union_vector_holds_common_block_then_each_clients_private_columns(federation):
    layout = union_layout(federation)
    # Every private column of every client has a distinct slot.
    widths = [c.private_encoder.width for c in federation.clients]
    assert layout.width >= federation.common_width + max(widths)
    for c in federation.clients:
        idx = layout.private_index(c.private_encoder)
        assert len(set(idx.tolist())) == c.private_encoder.width
        assert idx.min() >= federation.common_width
        x = layout.embed(c.train, c.private_encoder)
        np.testing.assert_array_equal(x[:, : federation.common_width], c.train.x_common)
        np.testing.assert_array_equal(x[:, idx], c.train.x_private)
        # Zeros wherever the client lacks a feature.
        others = np.setdiff1d(np.arange(federation.common_width, layout.width), idx)
        assert not x[:, others].any()


def test_clients_with_the_same_objective_share_private_slots(federation):
    layout = union_layout(federation)
    by_objectives: dict[tuple[str, ...], list] = {}
    for c in federation.clients:
        by_objectives.setdefault(c.objectives, []).append(c)
    shared = [cs for cs in by_objectives.values() if len(cs) > 1]
    assert shared, "fixture should have two clients with the same objective"
    for cs in shared:
        numeric = [layout.private_index(c.private_encoder)[:2] for c in cs]
        np.testing.assert_array_equal(numeric[0], numeric[1])


def test_union_view_replaces_x_common_and_keeps_labels(federation):
    union, layout = union_federation(federation)
    assert union.common_width == layout.width
    for u, c in zip(union.clients, federation.clients, strict=True):
        assert u.train.x_common.shape == (c.train.n, layout.width)
        assert u.test.x_private.shape == (c.test.n, 0)
        np.testing.assert_array_equal(u.val.y, c.val.y)


def test_union_view_keeps_patient_ordinals_and_subgroups():
    sensitive = (SensitiveAttribute("age", "age", (50.0, 70.0)), SensitiveAttribute("sex", "sex"))
    cohort = replace(make_cohort(120), sensitive=sensitive)
    federation = build_federation(cohort, PARTITION, DataConfig(clients=2), seed=0)
    union, _ = union_federation(federation)
    for u, c in zip(union.clients, federation.clients, strict=True):
        for name in SPLITS:
            a, b = u.split(name), c.split(name)
            assert a.groups is not None and a.groups is b.groups
            assert list(a.subgroups) == ["age", "sex"]
            for key in a.subgroups:
                np.testing.assert_array_equal(a.subgroups[key], b.subgroups[key])
