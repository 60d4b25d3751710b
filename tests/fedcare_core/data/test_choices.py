"""What a dataset offers a configuration is checked against that dataset, built in or not."""

from __future__ import annotations

import pytest

from fedcare_core.algorithms import validate_config
from fedcare_core.config import (
    DATASET_COHORTS,
    DATASET_FEATURE_SETS,
    DATASET_OBJECTIVES,
    DataConfig,
    ExperimentConfig,
)
from fedcare_core.data.choices import check_dataset_choices
from fedcare_core.errors import ConfigError


def _checked(**fields: object) -> None:
    """A data section checked whole: each setting, then against its dataset."""
    data = DataConfig(**fields)  # type: ignore[arg-type]
    data.validate()
    check_dataset_choices(data)


@pytest.mark.parametrize("dataset", ["diabetes130", "mimic3"])
def test_objectives_per_client_up_to_the_datasets_count(dataset: str) -> None:
    n = DATASET_OBJECTIVES[dataset]
    _checked(dataset=dataset, objectives_per_client=n)
    _checked(dataset=dataset, clients=2, cover_all_objectives=False)
    _checked(dataset=dataset, clients=2, objectives_per_client=2)  # 4 ≥ 3
    with pytest.raises(ConfigError, match=r"data\.cover_all_objectives"):
        _checked(dataset=dataset, clients=2)
    # a range wider than this dataset's count (another dataset's) still meets its own
    with pytest.raises(ConfigError, match=f"≤ {n}, the number of objectives of {dataset}"):
        _checked(dataset=dataset, objectives_per_client=n + 1)


def test_feature_sets_are_the_datasets_and_refuse_rho() -> None:
    from fedcare_core.data.diabetes130.definition import DIABETES130_FEATURE_SETS

    assert tuple(DIABETES130_FEATURE_SETS) == DATASET_FEATURE_SETS["diabetes130"]
    _checked(features="admission")
    with pytest.raises(ConfigError, match=r"'admission' is not defined for mimic3"):
        _checked(dataset="mimic3", features="admission")
    with pytest.raises(ConfigError, match=r"data\.rho \(--rho\) cannot be combined"):
        _checked(features="admission", rho=0.3)
    with pytest.raises(ConfigError, match=r"unknown feature set 'discharge' \(data\.features\)"):
        _checked(features="discharge")


def test_cohorts_are_the_loaders_and_mimic3_only() -> None:
    from fedcare_core.data.mimic3.cohorts import COHORTS, DEFAULT_COHORT

    assert DATASET_COHORTS["mimic3"] == tuple(COHORTS)
    assert DATASET_COHORTS["mimic3"][0] == DEFAULT_COHORT
    _checked(dataset="mimic3", cohort="benchmark-ihm")
    with pytest.raises(ConfigError, match=r"diabetes130 has no cohorts"):
        _checked(cohort="benchmark-ihm")
    with pytest.raises(ConfigError, match=r"unknown mimic3 cohort 'icu-72h' \(data\.cohort\)"):
        _checked(dataset="mimic3", cohort="icu-72h")


@pytest.mark.parametrize(
    ("document", "words"),
    [
        ({"data": {"objectives_per_client": 9}}, ("data.objectives_per_client", "≤ 3", "9")),
        ({"data": {"objectives_per_client": 4}}, ("data.objectives_per_client", "4")),
        ({"data": {"clients": 2}}, ("data.cover_all_objectives", "2 client(s)", "3 objectives")),
        ({"data": {"dataset": "mnist"}}, ("data.dataset", "'mnist'")),
    ],
)
def test_a_configuration_is_checked_against_its_dataset_before_any_work(
    document: dict[str, object], words: tuple[str, ...]
) -> None:
    config = ExperimentConfig.from_dict(document)  # each setting alone is valid
    with pytest.raises(ConfigError) as err:
        validate_config(config)
    assert all(word in str(err.value) for word in words), str(err.value)
