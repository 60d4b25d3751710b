"""Expectations described without Great Expectations, and a vectorised run of the simple ones.

Importing Great Expectations takes seconds, so a raw table's suite is described as plain
:class:`Expect` records (a Great Expectations class name, its arguments, its severity), generated
from the dataset's definition (:func:`data_checks.declared.declared_expectations`):
:func:`data_checks.suites.gx_expectation` turns each into its Great Expectations expectation
(the suite the flows validate and render), and :func:`certainly_passes` runs each of them on a
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
