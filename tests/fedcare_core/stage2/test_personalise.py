import numpy as np
import pytest
import torch

from fedcare_core.config import DataConfig, ModelConfig, Stage1Config, Stage2Config
from fedcare_core.data.clients import build_federation
from fedcare_core.objectives import predict
from fedcare_core.stage1.loop import load_global_model, run_stage1
from fedcare_core.stage2.personalise import build_personal_model, fine_tune
from tests.fedcare_core.synthetic import PARTITION, make_cohort

KINDS = {"early_discharge": "binary", "readmission": "binary", "los": "regression"}


@pytest.fixture(scope="module")
def setup():
    cfg = DataConfig(clients=3, objectives_per_client=2)
    fed = build_federation(make_cohort(300), PARTITION, cfg, seed=0)
    s1 = run_stage1(fed, ModelConfig(), Stage1Config(rounds=2, batch_size=32), seed=0)
    backbone = load_global_model(s1, fed.common_width, ModelConfig()).backbone.state_dict()
    return fed, backbone


def test_personal_model_starts_from_the_backbone(setup):
    fed, backbone = setup
    model = build_personal_model(backbone, fed.clients[0], ModelConfig(), seed=0)
    for k, v in model.backbone.state_dict().items():
        torch.testing.assert_close(v, backbone[k])


def test_multi_objective_client_mu_on_simplex_and_loss_falls(setup):
    fed, backbone = setup
    client = fed.clients[0]
    assert len(client.objectives) == 2
    res = fine_tune(
        backbone,
        client,
        KINDS,
        ModelConfig(),
        Stage2Config(epochs=8, patience=8, batch_size=32),
        seed=0,
    )
    assert sum(res.mu_mean.values()) == pytest.approx(1.0)
    for epoch_mu in res.mu_trace:
        assert all(0.0 <= v <= 1.0 for v in epoch_mu.values())
    assert res.train_loss[-1] < res.train_loss[0]
    assert 1 <= res.best_epoch <= len(res.val_loss)
    assert res.val_loss[res.best_epoch - 1] == min(res.val_loss)


def test_single_objective_weight_is_one():
    fed = build_federation(make_cohort(200), PARTITION, DataConfig(clients=3), seed=1)
    s1 = run_stage1(fed, ModelConfig(), Stage1Config(rounds=1, batch_size=32), seed=0)
    backbone = load_global_model(s1, fed.common_width, ModelConfig()).backbone.state_dict()
    res = fine_tune(backbone, fed.clients[0], KINDS, ModelConfig(), Stage2Config(epochs=2), seed=0)
    assert list(res.mu_mean.values()) == [pytest.approx(1.0)]


def test_private_features_reach_the_prediction(setup):
    fed, backbone = setup
    client = fed.clients[0]
    res = fine_tune(backbone, client, KINDS, ModelConfig(), Stage2Config(epochs=2), seed=0)
    xc = torch.from_numpy(client.test.x_common)
    xu = torch.from_numpy(client.test.x_private)
    s = client.objectives[0]
    with torch.no_grad():
        a = res.model(xc, xu, s)
        b = res.model(xc, torch.zeros_like(xu), s)
    assert not torch.allclose(a, b)


def test_fine_tune_is_deterministic(setup):
    fed, backbone = setup
    cfg = Stage2Config(epochs=2)
    a = fine_tune(backbone, fed.clients[1], KINDS, ModelConfig(), cfg, seed=3)
    b = fine_tune(backbone, fed.clients[1], KINDS, ModelConfig(), cfg, seed=3)
    assert a.val_loss == b.val_loss and a.mu_trace == b.mu_trace
    for (k, v), w in zip(a.model.state_dict().items(), b.model.state_dict().values(), strict=True):
        assert torch.equal(v, w), k


def test_epsilon_stop(setup):
    fed, backbone = setup
    res = fine_tune(
        backbone, fed.clients[0], KINDS, ModelConfig(), Stage2Config(epochs=5, epsilon=1e9), seed=0
    )
    assert res.stopped == "epsilon" and res.steps == 1
    assert np.isfinite(res.val_loss[0])


def _backbone_shift(res, backbone):
    """‖w_b − w*_b‖ of the deployed model (parameters; BatchNorm statistics apart)."""
    state = res.model.backbone.state_dict()
    keys = [k for k in backbone if "running" not in k and "num_batches" not in k]
    return float(sum(((state[k] - backbone[k]) ** 2).sum() for k in keys) ** 0.5)


def _tuned(setup, **stage2):
    fed, backbone = setup
    config = Stage2Config(epochs=3, patience=3, batch_size=64, **stage2)
    return fine_tune(backbone, fed.clients[0], KINDS, ModelConfig(), config, seed=0), backbone


def test_a_frozen_backbone_stays_w_star_bit_for_bit_while_the_heads_learn(setup):
    res, backbone = _tuned(setup, backbone_lr_scale=0.0)
    for k, v in res.model.backbone.state_dict().items():
        assert torch.equal(v, backbone[k]), k  # BatchNorm statistics included
    assert res.train_loss[-1] < res.train_loss[0]
    assert sum(res.mu_mean.values()) == pytest.approx(1.0)


def test_a_slower_backbone_and_a_pull_toward_w_star_move_it_less(setup):
    full = _backbone_shift(*_tuned(setup))
    slow = _backbone_shift(*_tuned(setup, backbone_lr_scale=0.1))
    pulled = _backbone_shift(*_tuned(setup, prox=50.0))
    assert 0 < slow < 0.5 * full
    assert 0 < pulled < full


def test_stage2_backbone_options_are_range_checked():
    from fedcare_core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"stage2.backbone_lr_scale must lie in \[0, 1\]"):
        Stage2Config(backbone_lr_scale=1.5).validate()
    with pytest.raises(ConfigError, match=r"stage2.prox must be ≥ 0"):
        Stage2Config(prox=-1.0).validate()


@pytest.fixture(scope="module")
def global_model(setup):
    fed, _ = setup
    s1 = run_stage1(fed, ModelConfig(), Stage1Config(rounds=2, batch_size=32), seed=0)
    return load_global_model(s1, fed.common_width, ModelConfig()).eval()


def test_heads_started_from_w_star_predict_as_w_star(setup, global_model):
    from fedcare_core.stage2.personalise import warm_start_heads

    fed, backbone = setup
    client = fed.clients[0]
    model = build_personal_model(backbone, client, ModelConfig(), seed=0)
    warm_start_heads(model, {s: h.state_dict() for s, h in global_model.heads.items()})
    model.eval()
    xc, xu = torch.from_numpy(client.val.x_common), torch.from_numpy(client.val.x_private)
    assert client.private_encoder.width > 0 and xu.abs().sum() > 0
    with torch.no_grad():
        for s in client.objectives:
            torch.testing.assert_close(model(xc, xu, s), global_model(xc, s), rtol=0, atol=1e-6)


def test_w_star_is_deployed_when_no_epoch_improves_on_it(setup, global_model):
    fed, backbone = setup
    heads = {s: h.state_dict() for s, h in global_model.heads.items()}
    # A step far too large: every epoch is worse on validation than the start, w*.
    bad = Stage2Config(epochs=2, patience=2, batch_size=64, lr=5.0, head_init="global")
    res = fine_tune(backbone, fed.clients[0], KINDS, ModelConfig(), bad, 0, heads)
    assert res.best_epoch == 0 and min(res.val_loss) > 0
    for k, v in res.model.backbone.state_dict().items():
        assert torch.equal(v, backbone[k])
    good = Stage2Config(epochs=3, patience=3, batch_size=64, head_init="global")
    assert fine_tune(backbone, fed.clients[0], KINDS, ModelConfig(), good, 0, heads).best_epoch > 0
    with pytest.raises(ValueError, match="needs w\\*'s heads"):
        fine_tune(backbone, fed.clients[0], KINDS, ModelConfig(), good, 0)


def _deployed_validation(res, client):
    xc, xu = torch.from_numpy(client.val.x_common), torch.from_numpy(client.val.x_private)
    with torch.no_grad():
        return {
            s: predict(KINDS[s], res.model(xc, xu, s)).double().numpy() for s in client.objectives
        }


def test_validation_outputs_are_cross_fitted_predictions_of_every_objective(setup):
    fed, backbone = setup
    client = fed.clients[0]
    config = Stage2Config(epochs=6, patience=6, batch_size=32)
    res = fine_tune(backbone, client, KINDS, ModelConfig(), config, seed=0)
    assert set(res.validation_outputs) == set(client.objectives)
    for objective, values in res.validation_outputs.items():
        assert values.shape == (client.val.n,)
        assert np.isfinite(values).all()
        if KINDS[objective] == "binary":
            assert ((values > 0) & (values < 1)).all()
    # One epoch: the whole split and each half keep the same weights, the deployed ones.
    once = fine_tune(backbone, client, KINDS, ModelConfig(), Stage2Config(epochs=1), seed=0)
    deployed = _deployed_validation(once, client)
    for objective, values in once.validation_outputs.items():
        np.testing.assert_allclose(values, deployed[objective], rtol=1e-6)


def test_cross_fitting_leaves_the_deployed_model_as_selected(setup):
    fed, backbone = setup
    client = fed.clients[0]
    config = Stage2Config(epochs=6, patience=6, batch_size=32)
    res = fine_tune(backbone, client, KINDS, ModelConfig(), config, seed=0)
    again = fine_tune(backbone, client, KINDS, ModelConfig(), config, seed=0)
    assert res.val_loss[res.best_epoch - 1] == min(res.val_loss)
    deployed, repeat = _deployed_validation(res, client), _deployed_validation(again, client)
    for objective in client.objectives:
        np.testing.assert_array_equal(deployed[objective], repeat[objective])
        np.testing.assert_array_equal(
            res.validation_outputs[objective], again.validation_outputs[objective]
        )
