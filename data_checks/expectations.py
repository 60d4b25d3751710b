"""Expectations described without Great Expectations, and a vectorised run of the simple ones.

Importing Great Expectations takes seconds, so the raw Diabetes 130 suite is described here as
plain :class:`Expect` records (a Great Expectations class name, its arguments, its severity):
:func:`data_checks.suites.diabetes130_raw_suite` turns them into the Great Expectations suite
(the one the flows validate and render), and :func:`certainly_passes` runs each of them on a
table with the very pandas operations Great Expectations' pandas engine applies (the same
null filter, map condition and success rule), without importing it.

:func:`certainly_passes` answers ``True`` only where Great Expectations would pass the
expectation; for a failure, an argument it does not model or a column it cannot judge it
answers ``False``, and the caller then runs the suite in Great Expectations, which decides
and words the report. Nothing here imports Great Expectations.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from fedcare_core.data.diabetes130 import (
    AGE_BRACKETS,
    COLUMNS_WITH_GAPS,
    DIABETES130_COLUMNS,
    DIABETES130_COUNT_COLUMNS,
    DIABETES130_VOCABULARIES,
    ICD9_CODE_PATTERN,
    READMITTED_VALUES,
    TIME_IN_HOSPITAL_RANGE,
)


@dataclass(frozen=True)
class Expect:
    """One expectation, as its Great Expectations class would be built.

    Parameters
    ----------
    kind
        The class's name in ``great_expectations.expectations`` (``"ExpectColumnValuesToBeInSet"``).
    kwargs
        Its arguments (tuples where the class takes a list).
    warning
        Severity ``warning`` (reported, never a refusal); else Great Expectations' default,
        ``critical``.
    """

    kind: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    warning: bool = False


# --------------------------------------------------------------------------------------------
# Diabetes 130-US (raw file, read as text)
# --------------------------------------------------------------------------------------------

#: Identifier columns: present and made of digits only (never checked against values).
DIABETES130_ID_COLUMNS: tuple[str, ...] = ("encounter_id", "patient_nbr")

#: Smallest share of non-missing values accepted in columns allowed to have gaps. In the
#: published file: race 97.8 %, payer_code 60.4 %, medical_specialty 50.9 %, diag_1 99.98 %,
#: diag_2 99.6 %, diag_3 98.6 %; weight (3 %) is not checked. Every other column is complete.
DIABETES130_MIN_PRESENT: dict[str, float] = {
    "race": 0.95,
    "payer_code": 0.5,
    "medical_specialty": 0.4,
    "diag_1": 0.99,
    "diag_2": 0.98,
    "diag_3": 0.95,
}

#: Columns with gaps in the published file and no share checked (every column the loader lets
#: have gaps, less those with a share above).
_DIABETES130_SPARSE = frozenset(COLUMNS_WITH_GAPS) - set(DIABETES130_MIN_PRESENT)

#: A non-negative decimal number written as text.
NON_NEGATIVE_NUMBER = r"^\d+(?:\.\d+)?$"
#: Digits only.
DIGITS = r"^\d+$"
#: An ICD-9-CM code as the file writes it (``250.83``, ``V45``, ``E812``).
ICD9_CODE = ICD9_CODE_PATTERN

_DIAG_COLUMNS = ("diag_1", "diag_2", "diag_3")


def diabetes130_raw_expectations(
    *,
    min_rows: int = 1,
    min_present: Mapping[str, float] | None = None,
    unseen_categories: str = "refuse",
) -> list[Expect]:
    """The raw ``diabetic_data.csv`` suite's expectations, in order.

    See :func:`data_checks.suites.diabetes130_raw_suite` for the parameters and what is
    expected.
    """
    present = dict(DIABETES130_MIN_PRESENT if min_present is None else min_present)
    out: list[Expect] = []
    add = out.append
    # Every column, in any order, others allowed (the loader reads by name, ignores extras).
    add(
        Expect(
            "ExpectTableColumnsToMatchSet",
            {"column_set": tuple(DIABETES130_COLUMNS), "exact_match": False},
        )
    )
    add(Expect("ExpectTableRowCountToBeBetween", {"min_value": min_rows}))
    for col in DIABETES130_COLUMNS:
        if col in _DIABETES130_SPARSE and col not in present:
            continue
        if col in present:  # a profile of the published file: a warning, never a refusal
            add(
                Expect(
                    "ExpectColumnValuesToNotBeNull",
                    {"column": col, "mostly": present[col]},
                    warning=True,
                )
            )
        else:
            add(Expect("ExpectColumnValuesToNotBeNull", {"column": col}))
    for col in DIABETES130_ID_COLUMNS:
        add(Expect("ExpectColumnValuesToMatchRegex", {"column": col, "regex": DIGITS}))
    add(Expect("ExpectColumnValuesToBeUnique", {"column": "encounter_id"}))
    lo, hi = TIME_IN_HOSPITAL_RANGE
    days = tuple(str(d) for d in range(lo, hi + 1))
    add(Expect("ExpectColumnValuesToBeInSet", {"column": "time_in_hospital", "value_set": days}))
    add(
        Expect(
            "ExpectColumnValuesToBeInSet",
            {"column": "readmitted", "value_set": tuple(READMITTED_VALUES)},
        )
    )
    for col in DIABETES130_COUNT_COLUMNS:
        add(Expect("ExpectColumnValuesToMatchRegex", {"column": col, "regex": NON_NEGATIVE_NUMBER}))
    add(Expect("ExpectColumnValuesToBeInSet", {"column": "age", "value_set": tuple(AGE_BRACKETS)}))
    for col, vocabulary in DIABETES130_VOCABULARIES.items():
        if col in _DIAG_COLUMNS:  # the vocabulary is of ICD-9 groups, not of raw codes
            continue
        if unseen_categories == "refuse":
            add(
                Expect(
                    "ExpectColumnValuesToBeInSet", {"column": col, "value_set": tuple(vocabulary)}
                )
            )
    for col in _DIAG_COLUMNS:
        add(Expect("ExpectColumnValuesToMatchRegex", {"column": col, "regex": ICD9_CODE}))
    return out


# --------------------------------------------------------------------------------------------
# The vectorised run
# --------------------------------------------------------------------------------------------

#: Each column map expectation modelled: the arguments besides ``column`` and ``mostly`` it
#: may have, the map condition Great Expectations' pandas engine applies (``True``: the value
#: is as expected), and whether missing values are left out of the column first (they are,
#: except for the not-null expectation, where they are what is counted).
_COLUMN_MAPS: dict[str, tuple[frozenset[str], Callable[..., Any], bool]] = {
    "ExpectColumnValuesToNotBeNull": (frozenset(), lambda column: column.notnull(), False),
    "ExpectColumnValuesToMatchRegex": (
        frozenset({"regex"}),
        lambda column, regex: _contains(column, regex),
        True,
    ),
    "ExpectColumnValuesToBeInSet": (
        frozenset({"value_set"}),
        lambda column, value_set: column.isin(list(value_set)),
        True,
    ),
    "ExpectColumnValuesToBeUnique": (
        frozenset(),
        lambda column: ~column.duplicated(keep=False),
        True,
    ),
}


def _contains(column: pd.Series, regex: str) -> pd.Series:
    """Great Expectations' regex map: a search (a declared pattern's groups are not wanted)."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "This pattern is interpreted as a regular expression")
        return column.astype(str).str.contains(regex)


def certainly_passes(table: pd.DataFrame, expect: Expect) -> bool:
    """Whether Great Expectations' pandas engine would pass ``expect`` on ``table``.

    ``True`` only when it certainly would; ``False`` when it would fail, or when the
    expectation has an argument, a column or a type this run does not model (a row condition,
    a missing column, a column that is not text).
    """
    kwargs = dict(expect.kwargs)
    if expect.kind == "ExpectTableColumnsToMatchSet":
        if set(kwargs) - {"column_set", "exact_match"} or not kwargs.get("column_set"):
            return False
        expected, actual = set(kwargs["column_set"]), set(table.columns)
        return expected == actual if kwargs.get("exact_match", True) else expected <= actual
    if expect.kind == "ExpectTableRowCountToBeBetween":
        bounds = [kwargs.get("min_value"), kwargs.get("max_value")]
        if set(kwargs) - {"min_value", "max_value"} or not all(_number(b) for b in bounds):
            return False
        low, high, rows = *bounds, len(table)
        return (
            bounds != [None, None]
            and (low is None or rows >= low)
            and (high is None or rows <= high)
        )
    modelled = _COLUMN_MAPS.get(expect.kind)
    column = kwargs.pop("column", None)
    mostly = kwargs.pop("mostly", 1.0)
    if modelled is None or column not in table.columns or set(kwargs) != modelled[0]:
        return False
    if not _number(mostly) or mostly is None:
        return False
    _, condition, skip_missing = modelled
    values = table[column]
    if not (pd.api.types.is_string_dtype(values.dtype) or values.dtype == object):
        return False
    total = len(values)
    if skip_missing:
        values = values[values.notnull()]
    if total == 0 or len(values) == 0:  # Great Expectations: vacuously true
        return True
    try:
        meets = np.asarray(condition(values, **kwargs), dtype=bool)
    except Exception:  # e.g. a bad pattern: Great Expectations reports it
        return False
    unexpected = int(np.count_nonzero(~meets))
    return bool((len(values) - unexpected) / len(values) >= float(mostly))


def _number(value: object) -> bool:
    """``None`` or a plain number (not a bool, not a suite parameter)."""
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool))


def failed_critical(table: pd.DataFrame, expectations: Sequence[Expect]) -> list[Expect]:
    """The critical expectations :func:`certainly_passes` cannot pass on ``table``.

    Warnings are run too (a warning never refuses data, so its outcome is not returned).
    """
    outcomes = [(e, certainly_passes(table, e)) for e in expectations]
    return [e for e, passed in outcomes if not passed and not e.warning]
