"""Each split carries its rows' patient ordinals and sensitive subgroups (never a patient key)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from fedcare_core.config import DataConfig, ExperimentConfig
from fedcare_core.data.clients import SPLITS, SplitArrays, build_federation
from fedcare_core.data.loading import load_dataset
from fedcare_core.data.subgroups import SensitiveAttribute
from fedcare_core.run.pipeline import prepare_federation
from tests.fedcare_core.synthetic import PARTITION, make_cohort

#: Age banded, sex, and a private feature with gaps (not every client holds it).
SENSITIVE = (
    SensitiveAttribute("age", "age", (50.0, 70.0)),
    SensitiveAttribute("sex", "sex"),
    SensitiveAttribute("specialty", "specialty"),
)


def _assert_patients_share_one_ordinal(split: SplitArrays) -> None:
    assert split.groups is not None and split.groups.dtype == np.int64
    assert split.groups.shape == (split.n,)
    # ordinals 0..P-1, every one used
    assert np.array_equal(np.unique(split.groups), np.arange(split.groups.max(initial=-1) + 1))


def test_splits_carry_patient_ordinals_and_subgroups() -> None:
    cohort = replace(make_cohort(240, rows_per_patient=3), sensitive=SENSITIVE)
    fed = build_federation(cohort, PARTITION, DataConfig(clients=3), seed=0)
    for client in fed.clients:
        for name in SPLITS:
            split = client.split(name)
            _assert_patients_share_one_ordinal(split)
            # 3 rows per patient in the cohort: each ordinal labels exactly 3 rows
            assert set(np.bincount(split.groups).tolist()) == {3}
            assert list(split.subgroups) == ["age", "sex", "specialty"]
            for labels in split.subgroups.values():
                assert labels.shape == (split.n,) and labels.dtype.kind == "U"
            assert set(split.subgroups["age"]) <= {"<50", "50-70", ">=70"}
            assert set(split.subgroups["sex"]) <= {"F", "M"}
            assert "missing" in set(split.subgroups["specialty"])


def test_a_cohort_without_sensitive_attributes_still_numbers_patients() -> None:
    fed = build_federation(make_cohort(120), PARTITION, DataConfig(clients=2), seed=1)
    split = fed.clients[0].test
    _assert_patients_share_one_ordinal(split)
    assert split.subgroups == {}


def test_a_client_cap_keeps_the_sensitive_attributes() -> None:
    cohort = replace(make_cohort(600), sensitive=SENSITIVE)
    config = DataConfig(clients=3, max_patients=400, max_patients_per_client=50)
    fed = build_federation(cohort, PARTITION, config, seed=3)
    for client in fed.clients:
        assert sum(client.split(s).groups.max() + 1 for s in SPLITS) == 50
        assert client.train.subgroups["age"].shape == (client.train.n,)


def test_a_sensitive_attribute_reads_a_feature_column() -> None:
    with pytest.raises(ValueError, match="not features"):
        replace(make_cohort(20), sensitive=(SensitiveAttribute("ward", "ward"),))
    twice = (SensitiveAttribute("sex", "sex"), SensitiveAttribute("sex", "age"))
    with pytest.raises(ValueError, match="distinct"):
        replace(make_cohort(20), sensitive=twice)


def test_split_arrays_refuse_tags_of_another_length() -> None:
    x, y = np.zeros((3, 1), np.float32), np.zeros((3, 1), np.float32)
    assert SplitArrays(x, x, y).groups is None
    with pytest.raises(ValueError, match="groups"):
        SplitArrays(x, x, y, groups=np.arange(2))
    with pytest.raises(ValueError, match="unicode"):
        SplitArrays(x, x, y, subgroups={"sex": np.array([1, 2, 3])})


@pytest.mark.realdata
def test_a_diabetes_federation_labels_race_sex_and_age(data_dir: Path) -> None:
    config = ExperimentConfig.from_dict(
        {"seed": 0, "data": {"dataset": "diabetes130", "clients": 3, "max_patients": 1500}}
    )
    loaded = load_dataset(config.data, data_dir)
    assert [a.name for a in loaded.cohort.sensitive] == ["age", "sex", "race"]
    fed = prepare_federation(loaded.cohort, loaded.partition, config, loaded.source)
    races = {"Caucasian", "AfricanAmerican", "Hispanic", "Asian", "Other", "missing"}
    seen: set[str] = set()
    repeat_patients = 0
    for client in fed.clients:
        test = client.test
        _assert_patients_share_one_ordinal(test)
        assert test.groups is not None
        assert set(test.subgroups) == {"age", "sex", "race"}
        assert set(test.subgroups["age"]) <= {"<50", "50-70", ">=70"}
        assert set(test.subgroups["sex"]) <= {"Female", "Male", "Unknown/Invalid"}
        assert set(test.subgroups["race"]) <= races
        seen |= set(test.subgroups["race"])
        repeat_patients += int((np.bincount(test.groups) > 1).sum())
        # a patient's rows share an ordinal, and so their sex (one patient, one sex)
        for g in np.flatnonzero(np.bincount(test.groups) > 1):
            assert len(set(test.subgroups["sex"][test.groups == g])) == 1
    assert repeat_patients > 0  # some patients have several encounters in a test split
    assert {"Caucasian", "AfricanAmerican"} <= seen
