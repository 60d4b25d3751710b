"""Client-level DP of Stage 1: the accountant, the joint clip, the noise's scale, the ledger."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

import fedcare_core.resume.checkpoint as ckpt
from fedcare_core.config import DataConfig, ExperimentConfig, ModelConfig, Stage1Config
from fedcare_core.data.clients import build_federation
from fedcare_core.errors import ConfigError
from fedcare_core.nn.param_vectors import get_buffers, get_params, param_layout
from fedcare_core.nn.training import objective_kinds
from fedcare_core.privacy.accountants import epsilon_spent, noise_for_budget
from fedcare_core.privacy.mechanism import (
    clip_jointly,
    noise_stream,
    privacy_record,
    resolve_dp,
)
from fedcare_core.resume.checkpoint import CheckpointedStage1, load_checkpoint
from fedcare_core.stage1.loop import (
    ServerState,
    build_model,
    client_update,
    run_stage1,
    server_step,
)
from fedcare_core.stage1.privacy_rounds import RoundNoise, clip_client_vectors, noisy_means
from fedcare_core.stage1.types import ClientUpdate, ObjectiveUpdate
from tests.fedcare_core.synthetic import PARTITION, make_cohort


@pytest.fixture(scope="module")
def fed():
    return build_federation(make_cohort(240), PARTITION, DataConfig(clients=3), seed=0)


def _dp(rounds=4, **kw):
    fields = {"rounds": rounds, "batch_size": 32, "dp_noise_multiplier": 1.1, "dp_noise_seed": 7}
    return Stage1Config(**(fields | kw))


def test_dp_is_off_unless_a_budget_or_a_multiplier_is_given():
    assert Stage1Config().privacy() is None
    on = Stage1Config(rounds=20, dp_epsilon=3.0).privacy()
    assert on is not None and on.epsilon_after(20) <= 3.0 and on.budget == 3.0
    assert Stage1Config(dp_noise_multiplier=2.0).privacy().budget is None


def test_a_run_whose_rounds_exceed_the_budget_is_refused_naming_the_parameters():
    with pytest.raises(ConfigError, match=r"dp_noise_multiplier 0.5 over 20 rounds.*dp_epsilon 3"):
        Stage1Config(rounds=20, dp_epsilon=3.0, dp_noise_multiplier=0.5).validate()
    with pytest.raises(ConfigError, match="loss"):
        Stage1Config(dp_epsilon=3.0, normalise="loss+").validate()
    for bad in ({"dp_delta": 1.0}, {"dp_clip": 0.0}, {"dp_epsilon": -1.0}):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            Stage1Config(**bad).validate()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("dp_noise_multiplier", 1e300),  # noise z·C overflowed the Gram: NaN λ*, a traceback
        ("dp_noise_multiplier", 1e-300),  # ε overflowed to inf: a "DP" run that guarantees nothing
        ("dp_clip", 1e300),
        ("dp_clip", 1e-320),  # a denormal scale that froze the model
    ],
)
def test_dp_numbers_that_would_overflow_later_are_refused_when_read(field, value):
    with pytest.raises(ConfigError, match=rf"stage1.{field} must lie in \[") as exc:
        ExperimentConfig.from_dict({"stage1": {field: value}})
    assert "1e+06]" in str(exc.value) or "1,000,000]" in str(exc.value)
    bounds = {"dp_noise_multiplier": (1e-3, 1e6), "dp_clip": (1e-6, 1e6)}[field]
    on = {} if field == "dp_noise_multiplier" else {"dp_noise_multiplier": 1.0}  # DP on: C used
    for ok in bounds:  # the bounds themselves are accepted
        stage1 = ExperimentConfig.from_dict({"stage1": {field: ok, **on}}).stage1
        assert getattr(stage1, field) == ok


def test_clip_jointly_bounds_the_concatenation_and_keeps_small_updates():
    rng = np.random.default_rng(0)
    big = [rng.normal(size=50) * 3, rng.normal(size=7)]
    clipped, factor = clip_jointly(big, 1.5)
    assert math.sqrt(sum(float(v @ v) for v in clipped)) == pytest.approx(1.5)
    assert factor < 1
    # One factor for all: the directions of the parts are kept, their ratio too.
    np.testing.assert_allclose(clipped[0] / big[0], clipped[1][0] / big[1][0])
    small = [np.full(4, 0.1)]
    assert clip_jointly(small, 1.5)[1] == 1.0


def test_a_private_client_update_is_clipped_jointly_and_discloses_no_counts_or_losses(fed):
    config = _dp(dp_clip=0.05)
    model = build_model(fed.common_width, fed.objective_names, ModelConfig(), 0)
    kinds = objective_kinds(fed)
    params, buffers = get_params(model), get_buffers(model)
    multi = max(fed.clients, key=lambda c: len(c.objectives))
    up = client_update(model, params, buffers, multi, kinds, config, seed=0, round_idx=1)
    plain = client_update(
        model,
        params,
        buffers,
        multi,
        kinds,
        dataclasses.replace(config, dp_noise_multiplier=None),
        seed=0,
        round_idx=1,
    )
    assert set(up.objectives) == set(multi.objectives)
    assert up.num_examples == 0
    assert all(o.num_examples == 0 and math.isnan(o.loss) for o in up.objectives.values())
    sent = [o.delta for o in up.objectives.values()] + [up.buffers]
    norm = math.sqrt(sum(float(np.sum(np.square(v, dtype=np.float64))) for v in sent))
    assert norm <= 0.05 and norm == pytest.approx(0.05, rel=1e-5)
    # The same direction as the unclipped update's: one factor scales every part.
    s = multi.objectives[0]
    cos = float(up.objectives[s].delta @ plain.objectives[s].delta) / (
        np.linalg.norm(up.objectives[s].delta) * np.linalg.norm(plain.objectives[s].delta)
    )
    assert cos == pytest.approx(1.0, abs=1e-5)


def test_clipped_float32_vectors_never_exceed_the_clip():
    rng = np.random.default_rng(3)
    for _ in range(20):
        deltas = {"a": rng.normal(size=1000).astype(np.float32) * 50}
        out, change = clip_client_vectors(deltas, rng.normal(size=64).astype(np.float32), 0.7)
        total = float(np.sum(np.square(out["a"], dtype=np.float64)))
        total += float(np.sum(np.square(change, dtype=np.float64)))
        assert math.sqrt(total) <= 0.7


def test_the_noise_on_each_objective_mean_is_the_accountants_multiplier_times_the_clip():
    # Zero updates: what the server computes is the noise alone, over the m contributors.
    settings = Stage1Config(rounds=20, dp_epsilon=3.0, dp_clip=0.8).privacy()
    assert settings is not None
    assert settings.noise_multiplier == pytest.approx(noise_for_budget(3.0, 1e-5, 20))
    dim, repliers = 20_000, 4
    contributions = [{"a": np.zeros(dim), "b": np.zeros(dim)}] * repliers
    contributions += [{"a": np.zeros(dim)}]
    changes = [np.zeros(10)] * len(contributions)
    means, change = noisy_means(
        contributions, changes, ["a", "b"], RoundNoise(settings, noise_stream(1, 1))
    )
    expected = settings.noise_multiplier * 0.8
    assert np.std(means["a"]) == pytest.approx(expected / 5, rel=0.03)
    assert np.std(means["b"]) == pytest.approx(expected / repliers, rel=0.03)
    assert abs(np.mean(means["a"])) < 3 * expected / 5 / math.sqrt(dim)
    assert change is not None and change.shape == (10,)
    # Each objective's noise is drawn independently.
    assert abs(np.corrcoef(means["a"], means["b"])[0, 1]) < 0.05


def test_a_private_server_step_counts_one_release_and_reports_its_epsilon(fed):
    config = _dp()
    model = build_model(fed.common_width, fed.objective_names, ModelConfig(), 0)
    layout = param_layout(model)
    state = ServerState(get_params(model), get_buffers(model))
    ups = [
        ClientUpdate(
            k,
            {"los": ObjectiveUpdate(np.zeros(layout.total, np.float32), 0, np.nan)},
            np.full(state.buffers.shape, -50.0, np.float32),
            0,
        )
        for k in range(2)
    ]
    settings = config.privacy()
    new, info = server_step(
        state, ups, fed.objective_names, layout, config, 1, RoundNoise(settings, noise_stream(5, 1))
    )
    assert new.dp_releases == 1 and info.epsilon == epsilon_spent(1.1, 1, 1e-5)
    assert info.losses == {} and info.lambdas == {"los": 1.0}
    # A huge negative change of the statistics keeps every running variance at the floor.
    for sl in layout.variances:
        assert np.all(new.buffers[sl] >= 1e-3)
    assert layout.variances and sum(sl.stop - sl.start for sl in layout.variances) == 256


def test_a_private_run_reports_a_non_decreasing_epsilon_within_its_budget(fed):
    config = Stage1Config(rounds=6, batch_size=32, dp_epsilon=2.0)
    result = run_stage1(fed, ModelConfig(), config, seed=0)
    eps = [r.epsilon for r in result.rounds]
    assert all(e is not None for e in eps)
    assert eps == sorted(eps) and 0 < eps[0] and eps[-1] <= 2.0
    assert all(r.losses == {} for r in result.rounds)
    record = privacy_record(config.privacy(), len(eps))
    assert record["epsilon"] == eps[-1] and record["noise"] == "os-entropy"
    assert str(record["accountant"]).startswith("dp-accounting 0.6")
    assert str(record["accountant"]).endswith("PLD")
    by = record["epsilon_by_accountant"]
    assert by["pld"] == record["epsilon"] < by["rdp"]


def test_seeded_noise_is_reproducible_and_unseeded_noise_is_fresh(fed):
    seeded = _dp()
    a = run_stage1(fed, ModelConfig(), seeded, seed=0)
    b = run_stage1(fed, ModelConfig(), seeded, seed=0)
    assert a.rounds == b.rounds
    np.testing.assert_array_equal(a.params, b.params)
    fresh = dataclasses.replace(seeded, dp_noise_seed=None)
    c = run_stage1(fed, ModelConfig(), fresh, seed=0)
    d = run_stage1(fed, ModelConfig(), fresh, seed=0)
    assert not np.array_equal(c.params, d.params)


def test_the_privacy_record_says_whether_the_noise_was_seeded_without_the_seed():
    record = privacy_record(
        resolve_dp(
            epsilon=None, delta=1e-5, noise_multiplier=1.0, clip=1.0, rounds=3, noise_seed=99
        ),
        3,
    )
    assert 99 not in record.values()
    assert record["noise"].startswith("seeded")


class Crash(Exception):
    """Stands for the process dying after a checkpoint was written."""


def test_a_resumed_private_run_accounts_from_the_checkpoint(fed, tmp_path, monkeypatch):
    config = _dp(rounds=5)
    plain = run_stage1(fed, ModelConfig(), config, seed=1)
    real = ckpt.save_checkpoint

    def save(path, snapshot, fingerprint):
        real(path, snapshot, fingerprint)
        if snapshot.round == 2:
            raise Crash

    path = tmp_path / "stage1.npz"
    with monkeypatch.context() as m:
        m.setattr(ckpt, "save_checkpoint", save)
        with pytest.raises(Crash):
            CheckpointedStage1(path)(fed, ModelConfig(), config, 1, None)
    assert load_checkpoint(path).state.dp_releases == 2
    resumed = CheckpointedStage1(path)(fed, ModelConfig(), config, 1, None)
    assert [r.epsilon for r in resumed.rounds] == [r.epsilon for r in plain.rounds]
    assert load_checkpoint(path).state.dp_releases == 5
    # Seeded noise: the resumed run is the uninterrupted one, bit for bit.
    np.testing.assert_array_equal(resumed.params, plain.params)
