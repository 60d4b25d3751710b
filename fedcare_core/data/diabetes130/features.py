"""The 46 Diabetes 130-US features, from the parsed file's columns.

``age`` becomes its bracket's midpoint and the seven counts stay numbers; the rest are strings,
with the three diagnoses mapped to ICD-9 groups and the integer code columns written as text.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from fedcare_core.data.diabetes130.reading import Checker
from fedcare_core.data.diabetes130.schema import (
    CODE_COLUMNS,
    DIABETES130_COUNT_COLUMNS,
    DIABETES130_FEATURES,
    DIAG_COLUMNS,
    ICD9_RANGES,
)

__all__ = ["age_midpoint", "build_features", "code_strings", "icd9_group"]


def _per_unique(raw: pd.Series) -> tuple[np.ndarray, pd.Series]:
    """Factorise ``raw``: integer codes (-1 = missing) and the unique values as a Series."""
    codes, uniques = pd.factorize(raw, use_na_sentinel=True)
    return np.asarray(codes), pd.Series(np.asarray(uniques, dtype=object), dtype="str")


def age_midpoint(raw: pd.Series, chk: Checker) -> pd.Series:
    """``"[70-80)"`` → 75.0; missing stays NaN.

    Parameters
    ----------
    raw
        The ``age`` brackets as strings.
    chk
        The file's error builder.

    Returns
    -------
    pandas.Series
        float64 midpoints aligned with ``raw``.

    Raises
    ------
    DataError
        If a value is not a bracket ``[lo-hi)`` with ``lo <= hi``.

    """
    codes, uniques = _per_unique(raw)
    parts = uniques.str.extract(r"^\s*\[\s*(\d+)\s*-\s*(\d+)\s*\)\s*$")
    lo = pd.to_numeric(parts[0], errors="coerce").to_numpy(dtype="float64")
    hi = pd.to_numeric(parts[1], errors="coerce").to_numpy(dtype="float64")
    bad_unique = np.isnan(lo) | np.isnan(hi) | (hi < lo)
    if bad_unique.any():
        bad = (codes >= 0) & bad_unique[np.maximum(codes, 0)]
        raise chk.error("age must be a bracket such as '[70-80)'", "age", bad)
    mid = np.append((lo + hi) / 2.0, np.nan)  # index -1 → NaN
    return pd.Series(mid[codes], index=raw.index, name=raw.name, dtype="float64")


def icd9_group(codes: pd.Series) -> pd.Series:
    """Map ICD-9 diagnosis codes to the Strack et al. (2014) chapter groups.

    Parameters
    ----------
    codes
        Codes as strings (``"428"``, ``"250.83"``, ``"V27"``); missing values allowed.

    Returns
    -------
    pd.Series
        One of ``circulatory``, ``respiratory``, ``digestive``, ``diabetes`` (250.xx),
        ``injury``, ``musculoskeletal``, ``genitourinary``, ``neoplasms`` or ``other``
        (everything else, including ``V``/``E`` codes and unparseable codes); missing stays
        missing.

    """
    idx, uniques = _per_unique(codes)
    num = pd.to_numeric(uniques, errors="coerce").to_numpy(dtype="float64")
    whole = np.floor(num)
    conds = []
    names = []
    for group, ranges in ICD9_RANGES:
        cond = np.zeros(len(num), dtype=bool)
        for lo, hi in ranges:
            cond |= (whole >= lo) & (whole <= hi)
        conds.append(cond)
        names.append(group)
    grouped = np.append(np.select(conds, names, default="other").astype(object), np.nan)
    return pd.Series(grouped[idx], index=codes.index, name=codes.name, dtype="str")


def code_strings(values: pd.Series) -> pd.Series:
    """Whole-number float codes → strings (``1.0`` → ``"1"``); missing stays missing.

    Parameters
    ----------
    values
        Integer codes as float64 (NaN = missing).

    Returns
    -------
    pandas.Series
        The codes as ``str``.

    """
    return values.astype("Int64").astype("str")


def build_features(
    df: pd.DataFrame,
    numbers: dict[str, pd.Series],
    chk: Checker,
    features: Sequence[str] = DIABETES130_FEATURES,
) -> pd.DataFrame:
    """The features of :data:`DIABETES130_FEATURES` (or the subset ``features``), in file order.

    Parameters
    ----------
    df
        The parsed file.
    numbers
        Its numeric source columns as float64 (see
        :func:`~fedcare_core.data.diabetes130.reading.check_sources`).
    chk
        The file's error builder.
    features
        Which features to build (default all 46), each from its column of the same name.

    Returns
    -------
    pandas.DataFrame
        One row per encounter on a fresh ``RangeIndex``; numeric features float64, the rest
        ``str`` with missing values left missing.

    Raises
    ------
    DataError
        If an ``age`` value is not a bracket.

    """
    cols: dict[str, pd.Series] = {}
    for c in features:
        if c == "age":
            cols[c] = age_midpoint(df[c], chk)
        elif c in DIABETES130_COUNT_COLUMNS:
            cols[c] = numbers[c]
        elif c in CODE_COLUMNS:
            cols[c] = code_strings(numbers[c])
        elif c in DIAG_COLUMNS:
            cols[c] = icd9_group(df[c])
        else:
            cols[c] = df[c].astype("str")
    return pd.DataFrame(cols).reset_index(drop=True)
