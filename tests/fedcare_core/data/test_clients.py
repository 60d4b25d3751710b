import numpy as np
import pytest

from fedcare_core.config import DataConfig
from fedcare_core.data.clients import (
    assign_patients,
    build_federation,
    draw_client_objectives,
    place_patients,
)
from fedcare_core.errors import DataError
from tests.fedcare_core.synthetic import PARTITION, make_cohort

NAMES = ("early_discharge", "readmission", "los")


def test_objective_draw_is_seeded_and_covers_every_objective():
    cfg = DataConfig(dataset="diabetes130", clients=4)
    a = draw_client_objectives(NAMES, cfg, seed=5)
    assert a == draw_client_objectives(NAMES, cfg, seed=5)
    assert {s for objs in a for s in objs} == set(NAMES)
    assert all(len(objs) == 1 for objs in a)


def test_multi_objective_clients_get_distinct_objectives():
    cfg = DataConfig(dataset="diabetes130", clients=6, objectives_per_client=2)
    for objs in draw_client_objectives(NAMES, cfg, seed=0):
        assert len(objs) == 2 and len(set(objs)) == 2


@pytest.mark.parametrize("split", ["iid", "dirichlet"])
def test_patients_never_span_two_clients(split):
    cohort = make_cohort(200, rows_per_patient=3)
    client = assign_patients(cohort, DataConfig(clients=5, client_split=split), seed=1)
    for p in np.unique(cohort.patient):
        assert len(set(client[cohort.patient == p])) == 1
    if split == "iid":
        counts = np.bincount(client, minlength=5)
        assert counts.max() - counts.min() <= 3  # 3 rows per patient, dealt evenly


def test_dirichlet_split_is_skewed_by_stratum():
    cohort = make_cohort(600)
    client = assign_patients(
        cohort, DataConfig(clients=3, client_split="dirichlet", dirichlet_alpha=0.1), seed=0
    )
    strata = cohort.strata.to_numpy()
    shares = [np.mean(strata[client == k] == "1") for k in range(3) if (client == k).any()]
    assert max(shares) - min(shares) > 0.2


@pytest.mark.parametrize("split", ["iid", "dirichlet"])
def test_a_client_cap_keeps_at_most_that_many_patients_per_client(split):
    cohort = make_cohort(600, rows_per_patient=2)
    config = DataConfig(clients=3, client_split=split, max_patients_per_client=40)
    kept, client = place_patients(cohort, config, seed=3)
    uncapped = assign_patients(cohort, config, seed=3)
    for k in range(3):
        patients = np.unique(kept.patient[client == k])
        assert len(patients) == min(40, len(np.unique(cohort.patient[uncapped == k])))
        # Kept patients stay at the client the uncapped assignment gave them, all their rows.
        assert set(np.unique(cohort.patient[uncapped == k])) >= set(patients)
        assert np.sum(np.isin(cohort.patient, patients)) == np.sum(client == k)
    again, client_again = place_patients(cohort, config, seed=3)
    assert np.array_equal(again.patient, kept.patient) and np.array_equal(client, client_again)
    fed = build_federation(cohort, PARTITION, config, seed=3)
    assert sum(c.train.n + c.val.n + c.test.n for c in fed.clients) == kept.n_rows


def test_a_cap_above_every_client_changes_nothing():
    cohort = make_cohort(120)
    config = DataConfig(clients=3, max_patients_per_client=1000)
    kept, client = place_patients(cohort, config, seed=0)
    assert kept is cohort
    assert np.array_equal(client, assign_patients(cohort, config, seed=0))


def test_splits_are_patient_disjoint_and_encoders_agree():
    cohort = make_cohort(300, rows_per_patient=2)
    fed = build_federation(cohort, PARTITION, DataConfig(clients=3), seed=0)
    assert len(fed.clients) == 3
    total = sum(c.train.n + c.val.n + c.test.n for c in fed.clients)
    assert total == cohort.n_rows
    assert len({c.common_encoder.width for c in fed.clients}) == 1
    # Patient-disjointness: rows of one patient are adjacent pairs with identical age? Use the
    # encoders' statistics instead: each client's scaler comes from its own training rows.
    means = [tuple(c.common_encoder.means) for c in fed.clients]
    assert len(set(means)) == 3


def test_client_statistics_use_only_its_training_rows():
    cohort = make_cohort(300)
    fed = build_federation(cohort, PARTITION, DataConfig(clients=2), seed=0)
    c = fed.clients[0]
    # Standardised training features have mean ~0 and std ~1; validation/test do not exactly.
    age_train = c.train.x_common[:, 0]
    assert abs(age_train.mean()) < 1e-5
    assert abs(age_train.std() - 1) < 1e-4


def test_private_features_follow_the_client_objectives():
    cohort = make_cohort(300)
    fed = build_federation(cohort, PARTITION, DataConfig(clients=3), seed=0)
    for c in fed.clients:
        assert c.private_features == PARTITION.private_for(c.objectives)
        assert c.train.x_private.shape[1] == c.private_encoder.width


def test_objective_without_positive_label_names_client_and_column():
    cohort = make_cohort(200)
    cohort.labels["readmission"] = 0.0
    cfg = DataConfig(clients=3)
    with pytest.raises(DataError) as err:
        build_federation(cohort, PARTITION, cfg, seed=0, source="diabetic_data.csv")
    msg = str(err.value)
    assert "diabetic_data.csv" in msg and "'readmission'" in msg and "no positive" in msg


def test_a_published_test_set_is_every_clients_test_split():
    from dataclasses import replace

    cohort = make_cohort(300, rows_per_patient=2)
    fixed = np.unique(cohort.patient)[::5]  # every fifth patient: the published test set
    cfg = DataConfig(clients=3)
    fed = build_federation(replace(cohort, test_patients=fixed), PARTITION, cfg, seed=2)
    drawn = build_federation(cohort, PARTITION, cfg, seed=2)
    client_of_row = assign_patients(cohort, cfg, seed=2)
    for k, client in enumerate(fed.clients):
        own = np.unique(cohort.patient[client_of_row == k])
        test = own[np.isin(own, fixed)]
        rows = (client_of_row == k) & np.isin(cohort.patient, test)
        assert client.test.n == int(rows.sum())
        # train : val keeps the ratio of their fractions (0.7 : 0.1) over the other patients
        rest = len(own) - len(test)
        assert client.train.n + client.val.n == 2 * rest
        assert client.val.n == 2 * (rest - round(0.7 / 0.8 * rest))
    assert [c.test.n for c in fed.clients] != [c.test.n for c in drawn.clients]
