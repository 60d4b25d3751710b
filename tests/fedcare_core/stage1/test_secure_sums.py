"""Stage 1 from per-objective sums: eq. 8 from the sums of pre-weighted vectors, ranges, grid."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fedcare_core.config import Stage1Config
from fedcare_core.nn.param_vectors import ParamLayout
from fedcare_core.stage1.loop import ClientUpdate, ObjectiveUpdate, ServerState, server_step
from fedcare_core.stage1.secure_sums import (
    COUNT_SCALE,
    INITIAL_CLIP,
    MAX_LEVELS,
    MODULUS,
    SecureSumError,
    SumLayout,
    choose_levels,
    grid_step,
    initial_clip,
    next_clip,
    pack_update,
    seal,
    secure_server_step,
    unpack_sums,
)

P, B = 3, 2
OBJS = ("a", "b")


def _layout() -> ParamLayout:
    return ParamLayout(
        total=P, backbone=slice(0, 1), heads={"a": slice(1, 2), "b": slice(2, 3)}, variances=()
    )


def _updates() -> list[ClientUpdate]:
    e = np.eye(P, dtype=np.float32)
    return [
        ClientUpdate(0, {"a": ObjectiveUpdate(3 * e[0], 10, 0.7)}, np.array([1.0, 2.0]), 30),
        ClientUpdate(
            1,
            {"a": ObjectiveUpdate(-e[1], 30, 0.1), "b": ObjectiveUpdate(4 * e[1], 5, 0.2)},
            np.array([0.0, 1.0]),
            10,
        ),
    ]


def _sum(updates, clip=1.0, levels=2**30, private=False):
    layout = SumLayout(OBJS, P, B)
    beta = np.array([0.5, 0.5])
    sealed = [
        seal(pack_update(u, beta, layout, private=private), clip, levels, private=private)
        for u in updates
    ]
    return unpack_sums(np.sum(sealed, axis=0), layout, clip, levels, len(updates))


def test_the_layout_holds_every_part_once():
    layout = SumLayout(OBJS, P, B)
    assert layout.objective_start("b") == P + 2
    assert layout.buffer_start == 2 * (P + 2)
    assert layout.size == 2 * (P + 2) + B + 1 + 3


def test_pack_weights_by_the_public_scale_and_skips_objectives_not_pursued():
    u = _updates()[0]
    v = pack_update(u, np.array([0.5, 0.5]), SumLayout(OBJS, P, B), private=False)
    a = 10 / COUNT_SCALE
    np.testing.assert_array_equal(v[:P], [3 * a, 0, 0])
    assert v[P] == a and v[P + 1] == pytest.approx(a * 0.7)
    assert not v[P + 2 : 2 * P + 4].any()  # objective b: not pursued, all zero
    np.testing.assert_allclose(v[2 * P + 4 : 2 * P + 6], 30 / COUNT_SCALE * np.array([0.5, 1.5]))
    assert v[2 * P + 6] == 30 / COUNT_SCALE


def test_sums_give_eq_8_and_the_same_step_as_server_step():
    updates = _updates()
    sums = _sum(updates)
    assert sums.contributors == 2 and sums.clipped == 0
    state = ServerState(np.zeros(P, np.float32), np.array([0.5, 0.5], np.float32))
    config = Stage1Config()
    plain, info = server_step(state, updates, OBJS, _layout(), config, 1)
    secure, sinfo = secure_server_step(state, sums, _layout(), config, 1, [1, 0])
    # Δ_a = (10·3e0 + 30·(−e1))/40 = (0.75, −0.75, 0); Δ_b = 4e1.
    step = 2 * 1.0 / 2**30
    for s in OBJS:
        assert sinfo.lambdas[s] == pytest.approx(info.lambdas[s], abs=1e-6)
        assert sinfo.losses[s] == pytest.approx(info.losses[s], abs=10 * step)
    assert sinfo.participants == (0, 1)
    np.testing.assert_allclose(secure.params, plain.params, atol=1e-6)
    # Statistics: (30·[1, 2] + 10·[0, 1]) / 40 = [0.75, 1.75].
    np.testing.assert_allclose(secure.buffers, [0.75, 1.75], atol=1e-5)


def test_seal_clips_flags_and_rounds_onto_the_grid():
    layout = SumLayout(OBJS, P, B)
    v = np.zeros(layout.size)
    v[0], v[1] = 0.3, -20.0
    sealed = seal(v, 1.0, 2**10, private=False)
    step = grid_step(1.0, 2**10)
    assert sealed[1] == -1.0  # clipped to the range
    assert sealed[-3:].tolist() == [0.5, 1.0, 1.0]  # sentinel, clip flag, min(max|x|, c)
    assert abs(sealed[0] - 0.3) <= step / 2
    np.testing.assert_array_equal(np.rint(sealed / step), sealed / step)  # on the grid
    # Under DP: toward zero (no value grows), and no largest value reported.
    private = seal(v, 1.0, 2**10, private=True)
    assert abs(private[0]) <= 0.3 and private[-1] == 0.0


def test_a_clipped_round_is_counted_and_a_spoiled_sum_refused():
    big = ClientUpdate(
        0, {"a": ObjectiveUpdate(np.full(P, 1e5, np.float32), 10, 0.0)}, np.zeros(B), 1
    )
    assert _sum([big, _updates()[1]]).clipped == 1
    layout = SumLayout(OBJS, P, B)
    bad = np.zeros(layout.size)
    with pytest.raises(SecureSumError, match="masks did not cancel"):
        unpack_sums(bad, layout, 1.0, 2**30, 2)


def test_dp_sums_are_uniform_means_plus_noise():
    from fedcare_core.stage1.privacy_rounds import private_update

    updates = [private_update(u.client_id, u.objectives, np.zeros(B), 1.0) for u in _updates()]
    sums = _sum(updates, clip=1.0, private=True)
    assert sums.weights == {"a": pytest.approx(2.0), "b": pytest.approx(1.0)}
    assert sums.largest == 0.0


def test_ranges():
    assert choose_levels(3) == MAX_LEVELS
    assert choose_levels(10) == 2**28
    assert 1000 * choose_levels(1000) < MODULUS
    assert initial_clip(Stage1Config()) == INITIAL_CLIP
    assert initial_clip(Stage1Config(dp_noise_multiplier=1.0, dp_clip=3.0)) == 4.0
    sums = _sum(_updates())
    # Σ_k max|x_k| = 0.03·... ; the next range is the power of two above twice that.
    nxt = next_clip(sums, 8.0, Stage1Config())
    assert nxt >= 2 * sums.largest and nxt < 4 * sums.largest + 1e-12
    assert next_clip(sums, 4.0, Stage1Config(dp_noise_multiplier=1.0)) == 4.0


def test_secagg_is_refused_for_algorithms_without_secure_rounds():
    from fedcare_core.algorithms import validate_config
    from fedcare_core.config import ExperimentConfig
    from fedcare_core.errors import ConfigError

    for name in ("fedcare", "fedcare-b"):
        validate_config(ExperimentConfig(algorithm=name, stage1=Stage1Config(secagg=True)))
    with pytest.raises(ConfigError, match="no securely aggregated rounds"):
        validate_config(ExperimentConfig(algorithm="fedavg", stage1=Stage1Config(secagg=True)))


def test_the_sites_noise_shares_sum_to_the_central_noise_and_the_server_tops_up_absent_sites():
    from fedcare_core.privacy.mechanism import DpSettings
    from fedcare_core.stage1.privacy_rounds import RoundNoise
    from fedcare_core.stage1.secure_sums import (
        _noisy_means_from_sums,
        add_site_noise,
        site_noise_rng,
        site_noise_std,
    )

    dp = DpSettings(noise_multiplier=2.0, clip=0.5, delta=1e-5)
    layout = SumLayout(("a", "b"), 4000, 1000)
    shares = [
        add_site_noise(
            np.zeros(layout.size), layout, site_noise_std(dp, 4), site_noise_rng(7, 1, k)
        )
        for k in range(4)
    ]
    total = np.sum(shares, axis=0)
    noised = np.concatenate([total[: layout.params], total[layout.buffer_start : -4]])
    assert np.std(noised) == pytest.approx(dp.noise_std, rel=0.03)  # four shares: z·C
    untouched = [layout.objective_start("a") + layout.params, layout.size - 1]
    assert all(total[i] == 0.0 for i in untouched)  # weights and the trailer carry no noise
    # Seeded shares are reproducible; unseeded ones come from OS entropy.
    again = add_site_noise(np.zeros(layout.size), layout, 1.0, site_noise_rng(7, 1, 0))
    np.testing.assert_array_equal(again * site_noise_std(dp, 4), shares[0])
    small = SumLayout(("a",), 2, 3)
    fresh = [
        add_site_noise(np.zeros(small.size), small, 1.0, site_noise_rng(None, 1, 0))
        for _ in range(2)
    ]
    assert not np.array_equal(*fresh)

    def server_noise(contributors):
        sums = unpack_sums(
            np.zeros(layout.size) + np.r_[np.zeros(layout.size - 3), [contributors * 0.5, 0, 0]],
            layout,
            1.0,
            2**20,
            contributors,
        )
        sums = replace(sums, weights={"a": float(contributors), "b": float(contributors)})
        rng = np.random.default_rng(0)
        means, _ = _noisy_means_from_sums(sums, ("a", "b"), RoundNoise(dp, rng, sites=4))
        return float(np.std(means["a"] * contributors))

    assert server_noise(4) == 0.0  # every site added its share: the server adds none
    assert server_noise(3) == pytest.approx(dp.noise_std / 2, rel=0.1)  # one share topped up
