"""Static features: category clean-up, ethnicity groups and gender."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fedcare_core.data.mimic3 import CATEGORICAL_FEATURES, MIMIC3_VOCABULARIES
from fedcare_core.data.mimic3.categories import (
    clean_category,
    ethnicity_group,
    gender,
    static_features,
)


def values(s: pd.Series) -> list[object]:
    return [None if pd.isna(v) else v for v in s]


def test_clean_category_strips_and_drops_unknown_markers() -> None:
    raw = pd.Series([" MICU ", "UNKNOWN (DEFAULT)", "** INFO NOT AVAILABLE **", "", None, "x"])
    assert values(clean_category(raw)) == ["MICU", None, None, None, None, "x"]


def test_ethnicity_groups() -> None:
    raw = pd.Series(
        [
            "WHITE - RUSSIAN",
            "BLACK/AFRICAN AMERICAN",
            "HISPANIC OR LATINO",
            "SOUTH AMERICAN",
            "ASIAN - CHINESE",
            "MULTI RACE ETHNICITY",
            "UNKNOWN/NOT SPECIFIED",
            "PATIENT DECLINED TO ANSWER",
            None,
        ]
    )
    assert values(ethnicity_group(raw)) == [
        "WHITE",
        "BLACK",
        "HISPANIC",
        "HISPANIC",
        "ASIAN",
        "OTHER",
        None,
        None,
        None,
    ]
    assert set(ethnicity_group(raw).dropna()) <= set(MIMIC3_VOCABULARIES["ethnicity"])


def test_gender() -> None:
    # Unknown markers are missing; any other value is kept for the known-category check.
    got = values(gender(pd.Series(["m", " F", "U", None, "unknown"])))
    assert got == ["M", "F", "U", None, None]


def test_static_features_columns() -> None:
    stays = pd.DataFrame(
        {
            "GENDER": ["M"],
            "ETHNICITY": ["WHITE"],
            "ADMISSION_TYPE": ["EMERGENCY"],
            "ADMISSION_LOCATION": ["EMERGENCY ROOM ADMIT"],
            "INSURANCE": ["Medicare"],
            "MARITAL_STATUS": ["UNKNOWN (DEFAULT)"],
            "FIRST_CAREUNIT": ["MICU"],
        },
        index=[7],
    )
    feats = static_features(stays, np.array([64.5]))
    assert list(feats.columns) == ["age", *CATEGORICAL_FEATURES]
    assert list(feats.index) == [0]
    assert feats.loc[0, "age"] == 64.5 and pd.isna(feats.loc[0, "marital_status"])
