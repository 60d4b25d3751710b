"""A declared dataset's labels, exclusions and cohort rule, evaluated over its typed columns.

A condition is three-valued: a comparison with a missing value is unknown (NaN), ``all`` is
false if any part is false, ``any`` true if any part is true, ``not`` swaps true and false.
A binary label is the condition (1, 0; unknown: no label); a regression label is a column's
value or the days (hours) between two date-times, refused where negative. An exclusion or
the cohort's rule holds only where its condition is true.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from fedcare_core.data.declared.model import (
    Combine,
    Compare,
    Condition,
    DatasetDeclaration,
    DeclaredObjective,
    Value,
)
from fedcare_core.data.declared.reading import TableRows

__all__ = ["describe_condition", "evaluate", "label_columns", "objective_label"]

_SECONDS = {"days": 86_400.0, "hours": 3_600.0}


def evaluate(condition: Condition, values: Mapping[str, pd.Series]) -> np.ndarray:
    """The condition per row: 1.0 true, 0.0 false, NaN unknown.

    Parameters
    ----------
    condition
        A checked condition (its columns are in ``values``).
    values
        Typed columns (:func:`~.values.column_values`).
    """
    if isinstance(condition, Combine):
        parts = [evaluate(item, values) for item in condition.items]
        if condition.op == "not":
            return 1.0 - parts[0]
        stacked = np.vstack(parts)
        return _kleene_all(stacked) if condition.op == "all" else _kleene_any(stacked)
    return _compare(condition, values[condition.column])


def _kleene_all(stacked: np.ndarray) -> np.ndarray:
    out = np.where(np.isnan(stacked).any(axis=0), np.nan, 1.0)
    return np.where((stacked == 0.0).any(axis=0), 0.0, out)


def _kleene_any(stacked: np.ndarray) -> np.ndarray:
    out = np.where(np.isnan(stacked).any(axis=0), np.nan, 0.0)
    return np.where((stacked == 1.0).any(axis=0), 1.0, out)


def _compare(condition: Compare, column: pd.Series) -> np.ndarray:
    missing = column.isna().to_numpy()
    if condition.op == "missing":
        return (missing == bool(condition.value)).astype(np.float64)
    numeric = pd.api.types.is_float_dtype(column.dtype)
    values = column.to_numpy(dtype=np.float64) if numeric else column.to_numpy(dtype=object)
    target = condition.value
    if condition.op in ("in", "not_in"):
        wanted = [float(v) for v in target] if numeric else [str(v) for v in target]  # type: ignore[attr-defined]
        hit = np.isin(values, wanted)
        result = hit if condition.op == "in" else ~hit
    else:
        operand = float(target) if numeric else str(target)  # type: ignore[arg-type]
        result = _ORDER_OPS[condition.op](values, operand)
    return np.where(missing, np.nan, np.asarray(result, dtype=np.float64))


_ORDER_OPS = {
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
}


def objective_label(
    objective: DeclaredObjective,
    values: Mapping[str, pd.Series],
    rows: TableRows,
    variant: str | None = None,
) -> np.ndarray:
    """One objective's label per row (NaN: no label), exclusions applied.

    ``variant`` names one of the objective's label variants (none of them: its label).

    Raises
    ------
    DataError
        A regression label that is negative (e.g. a discharge before its admission), naming
        the rows.
    """
    label_def = objective.label_of(variant)
    if isinstance(label_def, Value):
        label = _value(label_def, values)
        negative = label < 0
        if negative.any():
            raise rows.error(
                f"the label of {objective.objective.name} ({_describe(label_def)}) is "
                "negative; a regression label must be ≥ 0",
                label_def.columns[-1],
                negative,
            )
    else:
        label = evaluate(label_def, values)
    if objective.exclude is not None:
        label = np.where(evaluate(objective.exclude, values) == 1.0, np.nan, label)
    return np.asarray(label, dtype=np.float64)


def _value(label: Value, values: Mapping[str, pd.Series]) -> np.ndarray:
    if label.unit == "value":
        return values[label.columns[0]].to_numpy(dtype=np.float64)
    start, end = (values[c] for c in label.columns)
    seconds = (end - start).dt.total_seconds().to_numpy(dtype=np.float64)
    return seconds / _SECONDS[label.unit]


def _describe(label: Value) -> str:
    if label.unit == "value":
        return label.columns[0]
    return f"{label.unit} from {label.columns[0]} to {label.columns[1]}"


_SYMBOLS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "in": "in"}


def describe_condition(condition: Condition | Value) -> str:
    """A label or condition in words: ``readmitted != 'NO'``, ``all(...)``, ``days from A to B``."""
    if isinstance(condition, Value):
        return _describe(condition)
    if isinstance(condition, Combine):
        parts = ", ".join(describe_condition(c) for c in condition.items)
        return f"{condition.op}({parts})"
    if condition.op == "missing":
        return f"{condition.column} is {'' if condition.value else 'not '}missing"
    if condition.op == "not_in":
        return f"{condition.column} not in {list(condition.value)!r}"  # type: ignore[call-overload]
    value = list(condition.value) if condition.op == "in" else condition.value  # type: ignore[call-overload]
    return f"{condition.column} {_SYMBOLS[condition.op]} {value!r}"


def label_columns(declaration: DatasetDeclaration) -> tuple[str, ...]:
    """The columns labels, exclusions and the cohort's rule read: not needed to score a row."""
    from fedcare_core.data.declared.checks import condition_columns

    out: dict[str, None] = {}
    for o in declaration.objectives:
        for label in (o.label, *o.variants.values()):
            names = label.columns if isinstance(label, Value) else tuple(condition_columns(label))
            out.update(dict.fromkeys(names))
        if o.exclude is not None:
            out.update(dict.fromkeys(condition_columns(o.exclude)))
    if declaration.include is not None:
        out.update(dict.fromkeys(condition_columns(declaration.include)))
    return tuple(c for c in out if declaration.columns[c].known_at is None)
