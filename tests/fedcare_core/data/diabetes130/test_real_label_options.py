"""The clinical label options on the published file (skipped when the data is absent).

The defaults' labels are the recorded digests' (``test_builtin_definitions.py``); here the
other choices: no expired, AMA or transferred encounter keeps a label it should not,
and the notes report each label's positive share (measured values in docs/DATASETS.md).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from fedcare_core.config import DataConfig
from fedcare_core.data.loading import LoadedDataset, load_dataset
from fedcare_core.errors import ConfigError

pytestmark = pytest.mark.realdata

N_REAL = 101_766
EXPIRED = ["11", "19", "20", "21"]
HOSPICE = ["13", "14"]
AMA = ["7"]
TRANSFER = ["2"]  # to another short-term hospital
HOME = ["1", "6", "8"]


@pytest.fixture(scope="module")
def cleaner(data_dir: Path) -> LoadedDataset:
    """``--early-discharge home --readmission-exclude deaths-ama-transfers``."""
    config = DataConfig(early_discharge="home", readmission_exclude="deaths-ama-transfers")
    config.validate()
    return load_dataset(config, data_dir)


def test_home_labels_only_encounters_discharged_home(cleaner: LoadedDataset) -> None:
    cohort = cleaner.cohort
    assert cohort.n_rows == N_REAL  # nothing leaves the cohort: only the label goes
    disposition = cohort.features["discharge_disposition_id"]
    early = cohort.labels["early_discharge"]
    for gone in (EXPIRED, HOSPICE, AMA, TRANSFER):
        assert early[disposition.isin(gone)].isna().all()
    assert early.notna().to_numpy().tolist() == disposition.isin(HOME).to_numpy().tolist()
    assert early.notna().sum() == 73_244
    assert 0.53 < early.mean() < 0.545  # measured 0.5386 (39,449 of 73,244)
    np.testing.assert_array_equal(
        early.dropna().to_numpy(), (cohort.labels["los"][early.notna()] <= 3).to_numpy(float)
    )
    assert "early_discharge: 73,244 rows labelled, 39,449 positive (53.9%)" in cohort.notes


def test_readmission_excludes_deaths_ama_and_transfers(cleaner: LoadedDataset) -> None:
    cohort = cleaner.cohort
    disposition = cohort.features["discharge_disposition_id"]
    readmission = cohort.labels["readmission"]
    gone = disposition.isin(EXPIRED + HOSPICE + AMA + TRANSFER)
    assert readmission[gone].isna().all() and readmission[~gone].notna().all()
    assert int(gone.sum()) == 5_174  # 2,423 expired or hospice, 2,128 transfers, 623 AMA
    assert 0.105 < readmission.mean() < 0.12  # measured 0.1127 (10,882 of 96,592)
    assert "readmission: 96,592 rows labelled, 10,882 positive (11.3%)" in cohort.notes
    assert any(
        n.startswith("readmission: 5,174 rows have no label") and "2 (2,128)" in n
        for n in cohort.notes
    )


def test_home_or_not_is_refused_where_early_discharge_sees_the_disposition(
    data_dir: Path,
) -> None:
    config = DataConfig(early_discharge="home-or-not")
    with pytest.raises(ConfigError, match="discharge_disposition_id"):
        load_dataset(config, data_dir)
    cohort = load_dataset(replace(config, features="admission"), data_dir).cohort
    early = cohort.labels["early_discharge"]
    assert early.notna().all() and int(early.sum()) == 39_449  # home's positives, n 101,766
