"""Clinical plausibility of ``diabetic_data.csv``: ranges, formats, keys and cross-column rules.

Run after the columns parse (:func:`~fedcare_core.data.diabetes130.reading.check_sources`);
every refusal is a :class:`~fedcare_core.errors.DataError` naming the file, the column and the
1-based data rows, never a value.
"""

from __future__ import annotations

import pandas as pd

from fedcare_core.data.diabetes130.reading import Checker
from fedcare_core.data.diabetes130.schema import (
    AGE_BRACKETS,
    COLUMNS_WITH_GAPS,
    COUNT_RANGES,
    DIABETES130_COLUMNS,
    DIAG_COLUMNS,
    EXPIRED_DISCHARGE_IDS,
    ICD9_CODE_PATTERN,
)

__all__ = ["check_age", "check_counts", "check_diagnoses", "check_plausible"]


def check_plausible(df: pd.DataFrame, numbers: dict[str, pd.Series], chk: Checker) -> None:
    """Refuse values no real encounter can have.

    Parameters
    ----------
    df
        The parsed file (text columns).
    numbers
        Its numeric source columns as float64, already checked to parse.
    chk
        The file's error builder.

    Raises
    ------
    DataError
        If a column other than :data:`COLUMNS_WITH_GAPS` has a missing value, an identifier is
        not positive, or ``encounter_id`` repeats; a count is
        missing or outside :data:`COUNT_RANGES`; ``age`` is not one of the ten brackets; a
        diagnosis is not shaped like an ICD-9-CM code; or an encounter discharged expired is
        marked as readmitted.

    """
    for col in DIABETES130_COLUMNS:
        if col not in COLUMNS_WITH_GAPS and df[col].isna().any():
            raise chk.error(
                f"{col} is missing; only {', '.join(COLUMNS_WITH_GAPS)} may have gaps",
                col,
                df[col].isna(),
            )
    for col in ("encounter_id", "patient_nbr"):
        ids = numbers[col]
        bad = ids.isna() | (ids < 1)
        if bad.any():
            raise chk.error(f"{col} must be a positive whole number", col, bad)
    encounter = numbers["encounter_id"]
    repeated = encounter.duplicated(keep=False)
    if repeated.any():
        raise chk.error(
            f"encounter_id repeats ({int(repeated.sum())} rows share "
            f"{int(encounter[repeated].nunique())} encounter ids): each encounter must appear "
            "once",
            "encounter_id",
            repeated,
        )
    check_counts(numbers, chk)
    check_age(df, chk)
    check_diagnoses(df, chk)
    expired = numbers["discharge_disposition_id"].isin(sorted(EXPIRED_DISCHARGE_IDS))
    readmitted = expired & (df["readmitted"] != "NO")
    if readmitted.any():
        raise chk.error(
            "an encounter discharged expired (discharge_disposition_id "
            f"{sorted(EXPIRED_DISCHARGE_IDS)}) cannot be readmitted: readmitted must be NO",
            "readmitted",
            readmitted,
        )


def check_counts(numbers: dict[str, pd.Series], chk: Checker) -> None:
    """Refuse a missing count or one outside :data:`COUNT_RANGES`.

    Parameters
    ----------
    numbers
        The numeric columns as float64 (the counts of :data:`COUNT_RANGES` absent here are
        not checked).
    chk
        The file's error builder.

    Raises
    ------
    DataError
        Naming the first count column at fault and its rows.
    """
    for col, (lo, hi) in COUNT_RANGES.items():
        if col not in numbers:
            continue
        counts = numbers[col]
        bad = counts.isna() | (counts < lo) | (counts > hi)
        if bad.any():
            raise chk.error(
                f"{col} must be a whole number from {lo} to {hi} (a count; missing is not allowed)",
                col,
                bad,
            )


def check_age(df: pd.DataFrame, chk: Checker) -> None:
    """Refuse an ``age`` that is not one of the ten brackets (missing passes).

    Raises
    ------
    DataError
        Naming ``age`` and its rows.
    """
    age = df["age"]
    bad = age.notna() & ~age.isin(AGE_BRACKETS)
    if bad.any():
        raise chk.error(
            f"age must be one of the ten brackets {AGE_BRACKETS[0]} … {AGE_BRACKETS[-1]}",
            "age",
            bad,
        )


def check_diagnoses(df: pd.DataFrame, chk: Checker) -> None:
    """Refuse a diagnosis not shaped like an ICD-9-CM code (missing passes; absent columns too).

    Raises
    ------
    DataError
        Naming the first diagnosis column at fault and its rows.
    """
    for col in (c for c in DIAG_COLUMNS if c in df):
        codes = df[col]
        bad = codes.notna() & ~codes.astype("str").str.strip().str.match(ICD9_CODE_PATTERN)
        if bad.any():
            raise chk.error(
                f"{col} must be an ICD-9-CM code such as 428, 250.83, V45 or E812", col, bad
            )
