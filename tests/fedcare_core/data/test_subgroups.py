"""Sensitive attributes: each row's subgroup as text, and a split's patient ordinals."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedcare_core.data.subgroups import SensitiveAttribute, row_groups, subgroup_labels

AGE = SensitiveAttribute("age", "age", (50.0, 70.0))


def test_a_category_is_its_text_and_a_gap_is_missing() -> None:
    values = pd.Series(["Caucasian", None, "Asian", pd.NA, "Caucasian"], dtype=object)
    labels = subgroup_labels(SensitiveAttribute("race", "race"), values)
    assert labels.tolist() == ["Caucasian", "missing", "Asian", "missing", "Caucasian"]
    assert labels.dtype.kind == "U"


def test_a_number_is_banded_with_an_edge_in_the_band_above() -> None:
    values = pd.Series([12.0, 49.999, 50.0, 55.0, 69.9, 70.0, 95.0, np.nan])
    labels = subgroup_labels(AGE, values)
    assert labels.tolist() == [
        "<50", "<50", "50-70", "50-70", "50-70", ">=70", ">=70", "missing",
    ]  # fmt: skip
    assert labels.dtype.kind == "U"
    assert AGE.band_names == ("<50", "50-70", ">=70")


def test_more_bands_and_fractional_edges() -> None:
    attribute = SensitiveAttribute("bmi", "bmi", (18.5, 25.0, 30.0))
    labels = subgroup_labels(attribute, pd.Series([18.4, 18.5, 29.0, 31.0]))
    assert labels.tolist() == ["<18.5", "18.5-25", "25-30", ">=30"]


def test_a_number_without_bands_is_its_value() -> None:
    labels = subgroup_labels(SensitiveAttribute("n", "n"), pd.Series([1.0, 2.5, np.nan]))
    assert labels.tolist() == ["1", "2.5", "missing"]


def test_no_rows_give_no_labels() -> None:
    for attribute, values in (
        (AGE, pd.Series([], dtype=float)),
        (SensitiveAttribute("sex", "sex"), pd.Series([], dtype=object)),
    ):
        labels = subgroup_labels(attribute, values)
        assert labels.shape == (0,) and labels.dtype.kind == "U"


def test_bands_need_numbers_and_increase() -> None:
    with pytest.raises(ValueError, match="bands need numbers"):
        subgroup_labels(AGE, pd.Series(["old", "young"]))
    with pytest.raises(ValueError, match="strictly increasing"):
        SensitiveAttribute("age", "age", (70.0, 50.0))
    with pytest.raises(ValueError, match="strictly increasing"):
        SensitiveAttribute("age", "age", (50.0, 50.0))
    with pytest.raises(ValueError, match="finite"):
        SensitiveAttribute("age", "age", (50.0, float("inf")))


def test_row_groups_number_a_splits_patients_and_label_its_rows() -> None:
    patient = np.array([907, 12, 907, 55, 12], dtype=np.int64)
    features = pd.DataFrame({"age": [45.0, 75.0, 45.0, np.nan, 75.0], "sex": list("FMFMM")})
    tags = row_groups(patient, features, (AGE, SensitiveAttribute("sex", "sex")))
    assert tags.groups.dtype == np.int64
    assert tags.groups.tolist() == [2, 0, 2, 1, 0]  # ranks among the split's patients
    assert tags.subgroups["age"].tolist() == ["<50", ">=70", "<50", "missing", ">=70"]
    assert tags.subgroups["sex"].tolist() == list("FMFMM")
    assert row_groups(patient, features, ()).subgroups == {}
