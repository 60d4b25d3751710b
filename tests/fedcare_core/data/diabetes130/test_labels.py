"""Labels from the tiny fixture: early discharge, readmission (both definitions), LOS."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedcare_core.data.diabetes130.labels import build_labels
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
    note = next(n for n in c.notes if "cannot be readmitted" in n)
    assert "2 encounters" in note and "expired (1" in note and "hospice (1" in note


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


def test_build_labels_on_hand_made_columns() -> None:
    readmitted = pd.Series(["<30", ">30", "NO", "<30"])
    numbers = {
        "time_in_hospital": pd.Series([1.0, 3.0, 4.0, 14.0]),
        "discharge_disposition_id": pd.Series([1.0, 11.0, 13.0, 1.0]),
    }
    labels, notes = build_labels(readmitted, numbers, "30d")
    assert list(labels.columns) == ["early_discharge", "readmission", "los"]
    np.testing.assert_array_equal(labels["early_discharge"], [1.0, 1.0, 0.0, 0.0])
    np.testing.assert_array_equal(labels["readmission"], [1.0, np.nan, np.nan, 1.0])
    np.testing.assert_array_equal(labels["los"], [1.0, 3.0, 4.0, 14.0])
    assert notes[0] == "readmission label: readmitted == '<30'"
    assert "2 encounters have no label" in notes[1]
    any_labels, _ = build_labels(readmitted.replace("<30", ">30"), numbers, "any")
    np.testing.assert_array_equal(any_labels["readmission"], [1.0, np.nan, np.nan, 1.0])
