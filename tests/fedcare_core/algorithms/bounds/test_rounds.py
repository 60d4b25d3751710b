import dataclasses

import numpy as np

from fedcare_core.algorithms.bounds.rounds import fit_local_client, pooled, run_centralised
from fedcare_core.config import ModelConfig
from fedcare_core.config.method_options import baselines
from fedcare_core.nn.training import objective_kinds

QUICK = baselines(batch_size=32, bound_epochs=2)


def run_local(federation, model_config, config, seed):
    """Each client trained alone, in client order (the Local bound's per-client phase)."""
    kinds = objective_kinds(federation)
    return [
        fit_local_client(c, kinds, federation.common_width, model_config, config, seed)
        for c in federation.clients
    ]


def _params(model):
    return np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])


def test_local_trains_each_client_on_its_own_data_only(union):
    fits = run_local(union, ModelConfig(), QUICK, seed=0)
    assert len(fits) == len(union.clients)
    for f, c in zip(fits, union.clients, strict=True):
        assert tuple(f.model.heads) == c.objectives
    # No communication: changing client 0's data leaves every other client's model as it was.
    c0 = union.clients[0]
    shuffled = dataclasses.replace(
        c0, train=dataclasses.replace(c0.train, x_common=c0.train.x_common[::-1].copy())
    )
    other = dataclasses.replace(union, clients=(shuffled, *union.clients[1:]))
    refits = run_local(other, ModelConfig(), QUICK, seed=0)
    assert not np.array_equal(_params(refits[0].model), _params(fits[0].model))
    for a, b in zip(refits[1:], fits[1:], strict=True):
        np.testing.assert_array_equal(_params(a.model), _params(b.model))


def test_centralised_pools_every_clients_rows_with_labels_by_objective(union):
    names = list(union.objective_names)
    train = pooled(union.clients, names, "train")
    assert len(train.x) == sum(c.train.n for c in union.clients)
    assert train.y.shape == (len(train.x), len(names))
    start = 0
    for c in union.clients:
        rows = slice(start, start + c.train.n)
        for j, s in enumerate(names):
            col = train.y[rows, j]
            if s in c.objectives:
                np.testing.assert_array_equal(col, c.train.y[:, c.objectives.index(s)])
            else:
                assert np.isnan(col).all()
        start += c.train.n
    fit = run_centralised(union, ModelConfig(), QUICK, seed=0)
    assert tuple(fit.model.heads) == union.objective_names
    assert 1 <= fit.best_epoch <= 2 and len(fit.val_loss) == 2


def _finite_rows(outputs, client):
    """Every objective of the client has one finite prediction per validation row."""
    assert set(outputs) == set(client.objectives)
    for values in outputs.values():
        assert values.shape == (client.val.n,) and np.isfinite(values).all()


def test_local_cross_fits_its_validation_rows_and_deploys_the_same_model(roomy):
    from fedcare_core.algorithms.bounds.rounds import _LabelledArrays, fit
    from fedcare_core.algorithms.union.common import build_full_mlp
    from fedcare_core.algorithms.union.features import union_federation
    from fedcare_core.nn.training import client_losses, loss_groups

    union = union_federation(roomy)[0]
    config = dataclasses.replace(QUICK, bound_epochs=4)
    fits = run_local(union, ModelConfig(), config, seed=3)
    for f, c in zip(fits, union.clients, strict=True):
        _finite_rows(f.validation_outputs, c)
    # The folds only read the model: without them the same epoch's weights are deployed.
    c = union.clients[0]
    kinds = objective_kinds(union)
    losses = client_losses(c, kinds)
    model = build_full_mlp(union.common_width, c.objectives, ModelConfig(), 3, "local", c.client_id)
    plain = fit(
        model,
        c.objectives,
        losses,
        _LabelledArrays(c.train.x_common, c.train.y, loss_groups(losses, c.train)),
        _LabelledArrays(c.val.x_common, c.val.y, loss_groups(losses, c.val)),
        config,
        3,
        "local",
        c.client_id,
    )
    assert plain.validation_outputs == {} and plain.best_epoch == fits[0].best_epoch
    np.testing.assert_array_equal(_params(plain.model), _params(fits[0].model))


def test_centralised_cross_fits_the_pooled_validation_rows_client_by_client(roomy):
    from fedcare_core.algorithms.bounds.rounds import _pooled_patients, client_slices
    from fedcare_core.algorithms.union.features import union_federation

    union = union_federation(roomy)[0]
    patients = _pooled_patients(union.clients)
    start = 0
    for c in union.clients:  # a patient's rows are one client's
        own = set(patients[start : start + c.val.n].tolist())
        assert not own & set(np.delete(patients, np.s_[start : start + c.val.n]).tolist())
        start += c.val.n
    fit = run_centralised(union, ModelConfig(), QUICK, seed=0)
    per_client = client_slices(fit.validation_outputs, union.clients)
    for outputs, c in zip(per_client, union.clients, strict=True):
        assert set(outputs) == set(union.objective_names)
        for s in c.objectives:
            assert outputs[s].shape == (c.val.n,) and np.isfinite(outputs[s]).all()
