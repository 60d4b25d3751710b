"""The static features of an ICU stay: age and the cleaned demographic and admission categories."""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["clean_category", "ethnicity_group", "gender", "static_features"]

#: Values MIMIC-III uses for "not known" in its category columns (compared upper case).
_MISSING_MARKERS = {
    "",
    "UNKNOWN",
    "UNKNOWN (DEFAULT)",
    "** INFO NOT AVAILABLE **",
    "NOT SPECIFIED",
}
_ETHNICITY_MISSING = {
    "UNKNOWN/NOT SPECIFIED",
    "UNABLE TO OBTAIN",
    "PATIENT DECLINED TO ANSWER",
    "UNKNOWN",
}
#: Ethnicity prefixes and the group each maps to; any other known value is OTHER.
_ETHNICITY_PREFIXES = (
    ("WHITE", "WHITE"),
    ("BLACK", "BLACK"),
    ("HISPANIC", "HISPANIC"),
    ("SOUTH AMERICAN", "HISPANIC"),
    ("ASIAN", "ASIAN"),
)


def clean_category(values: pd.Series) -> pd.Series:
    """Strip strings and turn MIMIC's 'unknown' markers into NaN.

    Parameters
    ----------
    values
        Raw category strings (NaN = missing).

    Returns
    -------
    pandas.Series
        A ``str`` Series aligned with ``values``.

    """
    s = values.astype("str").str.strip()
    return s.where(~s.str.upper().isin(_MISSING_MARKERS)).astype("str")


def ethnicity_group(values: pd.Series) -> pd.Series:
    """Group MIMIC-III's ~40 ethnicity strings into WHITE, BLACK, HISPANIC, ASIAN, OTHER.

    Parameters
    ----------
    values
        Raw ``ETHNICITY`` strings.

    Returns
    -------
    pandas.Series
        The group per value (``str``); unknown or declined values are NaN.

    """
    s = values.astype("str").str.strip().str.upper()
    known = (s.notna() & (s != "") & ~s.isin(_ETHNICITY_MISSING)).to_numpy(dtype=bool)
    groups = np.full(len(s), np.nan, dtype=object)
    groups[known] = "OTHER"
    for prefix, group in _ETHNICITY_PREFIXES:
        hit = s.str.startswith(prefix).fillna(False).to_numpy(dtype=bool)
        groups[known & hit] = group
    return pd.Series(groups, index=values.index, dtype="str")


def gender(values: pd.Series) -> pd.Series:
    """Upper-cased ``GENDER``; MIMIC's 'unknown' markers and empty values become NaN.

    Any other value is kept, so that the loader's known-category check sees it (refused, or
    encoded as ``other`` with ``unseen_categories="other"``).

    Parameters
    ----------
    values
        Raw ``GENDER`` strings.

    Returns
    -------
    pandas.Series
        ``"M"``, ``"F"``, another upper-cased value or NaN per value (``str``).

    """
    return clean_category(values).str.upper().astype("str")


def static_features(stays: pd.DataFrame, age: np.ndarray) -> pd.DataFrame:
    """Age and the seven categorical features of each cohort stay.

    Parameters
    ----------
    stays
        Cohort stays joined with their admission and patient rows (``GENDER``, ``ETHNICITY``,
        ``ADMISSION_TYPE``, ``ADMISSION_LOCATION``, ``INSURANCE``, ``MARITAL_STATUS``,
        ``FIRST_CAREUNIT``), one per cohort row.
    age
        Age in years at ICU admission, aligned with ``stays``.

    Returns
    -------
    pandas.DataFrame
        Columns ``age`` (float64) and the categorical features, on a ``RangeIndex``.

    """
    feats = pd.DataFrame(index=pd.RangeIndex(len(stays)))
    feats["age"] = age.astype(np.float64)
    feats["gender"] = gender(stays["GENDER"])
    feats["ethnicity"] = ethnicity_group(stays["ETHNICITY"])
    feats["admission_type"] = clean_category(stays["ADMISSION_TYPE"])
    feats["admission_location"] = clean_category(stays["ADMISSION_LOCATION"])
    feats["insurance"] = clean_category(stays["INSURANCE"])
    feats["marital_status"] = clean_category(stays["MARITAL_STATUS"])
    feats["first_careunit"] = clean_category(stays["FIRST_CAREUNIT"])
    return feats
