"""Labels from the tiny fixture: early discharge, readmission (both definitions), LOS."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedcare_core.errors import ConfigError
from tests.fedcare_core.data.diabetes130.helpers import FIXTURE, load_tiny


def test_labels() -> None:
    c = load_tiny()
    raw = pd.read_csv(FIXTURE, dtype=str, keep_default_na=False)
    tih = raw["time_in_hospital"].astype(int).to_numpy()
    np.testing.assert_array_equal(c.labels["early_discharge"], (tih <= 3).astype(float))
    np.testing.assert_array_equal(c.labels["los"], tih.astype(float))
    disp = raw["discharge_disposition_id"].astype(int)
    gone = disp.isin([11, 19, 20, 21, 13, 14]).to_numpy()
    assert gone.sum() == 2  # one expired (row 5), one hospice (row 10)
    assert c.labels["readmission"].isna().to_numpy().tolist() == gone.tolist()
    want = (raw["readmitted"] == "<30").astype(float).to_numpy()
    np.testing.assert_array_equal(c.labels["readmission"].to_numpy()[~gone], want[~gone])
    # Hand-set rows: 1 NO, 2 <30, 3 >30, 5 expired, 10 hospice with "<30".
    assert c.labels["readmission"].iloc[[0, 1, 2]].tolist() == [0.0, 1.0, 0.0]
    assert np.isnan(c.labels["readmission"].iloc[4]) and np.isnan(c.labels["readmission"].iloc[9])
    note = next(n for n in c.notes if n.startswith("readmission: "))
    assert "2 rows have no label (discharge_disposition_id in [11, 13, 14, 19, 20, 21])" in note


def test_any_readmission_option() -> None:
    c = load_tiny(readmission="any")
    raw = pd.read_csv(FIXTURE, dtype=str, keep_default_na=False)
    want = (raw["readmitted"] != "NO").astype(float).to_numpy()
    got = c.labels["readmission"].to_numpy()
    keep = ~np.isnan(got)
    np.testing.assert_array_equal(got[keep], want[keep])
    assert c.labels["readmission"].isna().sum() == 2
    assert any("!= 'NO'" in n for n in c.notes)
    with pytest.raises(ConfigError):
        load_tiny(readmission="60d")
