import numpy as np

from fedcare_core.algorithms.fedxgb.rounds import (
    ClientMargins,
    holders,
    round_participants,
    run_rounds,
)
from fedcare_core.config.method_options import baselines
from fedcare_core.nn.training import objective_kinds


def test_bagging_adds_each_holders_trees_every_round_and_learns(federation):
    kinds = objective_kinds(federation)
    base = baselines(fedxgb_local_trees=2, fedxgb_depth=3, fedxgb_eta=0.3)
    out = run_rounds(federation, kinds, base, rounds=4, seed=0)
    for objective in kinds:
        chosen = out.chosen[objective]
        assert 1 <= chosen <= 4
        trees = chosen * 2 * len(holders(federation, objective))
        assert len(out.ensembles[objective].trees) == trees
    assert [r.round for r in out.rounds] == [1, 2, 3, 4]
    for objective in kinds:
        losses = [r.losses[objective] for r in out.rounds]
        assert losses[-1] < losses[0]


def test_cyclic_asks_one_client_a_round_in_order(federation):
    ids = [c.client_id for c in federation.clients]
    assert round_participants("cyclic", ids, ids, 1) == [ids[0]]
    assert round_participants("cyclic", ids, ids, len(ids) + 2) == [ids[1]]
    assert round_participants("cyclic", ids, ids[1:], 1) == []
    assert round_participants("bagging", ids, ids[1:], 3) == ids[1:]
    kinds = objective_kinds(federation)
    base = baselines(fedxgb_strategy="cyclic", fedxgb_depth=3)
    out = run_rounds(federation, kinds, base, rounds=len(ids), seed=0)
    assert [r.participants for r in out.rounds] == [(k,) for k in ids]
    for objective in kinds:
        assert len(out.ensembles[objective].trees) == len(holders(federation, objective))


def test_the_same_seed_gives_the_same_trees(federation):
    kinds = objective_kinds(federation)
    base = baselines(fedxgb_depth=3)
    a = run_rounds(federation, kinds, base, rounds=3, seed=5)
    b = run_rounds(federation, kinds, base, rounds=3, seed=5)
    for objective in kinds:
        assert a.ensembles[objective].to_bytes() == b.ensembles[objective].to_bytes()


def test_a_clients_margins_count_only_new_rounds_and_equal_a_fresh_score(federation):
    kinds = objective_kinds(federation)
    base = baselines(fedxgb_depth=3, fedxgb_eta=1.0)
    out = run_rounds(federation, kinds, base, rounds=4, seed=0)
    objective = next(s for s, e in out.ensembles.items() if len(e.bounds) >= 2)
    ensemble = out.ensembles[objective]
    x = federation.clients[0].train.x_common
    margins = ClientMargins()
    early = margins.current(objective, ensemble.truncated(ensemble.bounds[0]), x).copy()
    assert margins.counted[objective] == 1
    later = margins.current(objective, ensemble, x)
    assert margins.counted[objective] == len(ensemble.bounds)
    assert not np.array_equal(early, later)
    np.testing.assert_array_equal(later, ClientMargins().current(objective, ensemble, x))


def test_each_objective_keeps_the_round_its_holders_validation_loss_chose(federation):
    kinds = objective_kinds(federation)
    # A rate this high over-fits a few hundred rows within a few rounds.
    base = baselines(fedxgb_depth=6, fedxgb_eta=1.0, fedxgb_local_trees=3)
    out = run_rounds(federation, kinds, base, rounds=8, seed=0)
    assert len(out.validation) == 8
    for objective in kinds:
        curve = [v[objective] for v in out.validation]
        assert out.chosen[objective] == 1 + int(np.argmin(curve))
    assert any(out.chosen[s] < 8 for s in kinds)
