"""A declared dataset's labels, exclusions and cohort rule, evaluated over its typed columns.

A condition is three-valued: a comparison with a missing value is unknown (NaN), ``all`` is
false if any part is false, ``any`` true if any part is true, ``not`` swaps true and false.
A binary label is the condition (1, 0; unknown: no label); a regression label is a column's
value or the days (hours) between two date-times, refused where negative. An exclusion or
the cohort's rule holds only where its condition is true.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

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
from fedcare_core.errors import DataError
from fedcare_core.objectives import objective_kind

__all__ = [
    "describe_condition",
    "evaluate",
    "label_columns",
    "label_notes",
    "objective_label",
    "refuse_empty_cohort",
]

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
    variants: str | Sequence[str] | None = None,
) -> np.ndarray:
    """One objective's label per row (NaN: no label), exclusions applied.

    Parameters
    ----------
    objective
        The checked objective.
    values
        Typed columns (:func:`~.values.column_values`).
    rows
        Where the rows come from (messages).
    variants
        The selected variant names (one, several, or None: none): the label and the exclusion
        are those :meth:`~.model.DeclaredObjective.labelling` picks.

    Raises
    ------
    DataError
        A regression label that is negative (e.g. a discharge before its admission), naming
        the rows.
    """
    labelling = objective.labelling(variants)
    label_def = labelling.label
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
    if labelling.exclude is not None:
        label = np.where(evaluate(labelling.exclude, values) == 1.0, np.nan, label)
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


def refuse_empty_cohort(declaration: DatasetDeclaration, keep: np.ndarray, rows: TableRows) -> None:
    """Refuse a cohort rule that keeps no row: the rule, its definition and the counts named.

    Raises
    ------
    DataError
        Naming the files read, the definition file and its ``cohort.include`` in words, with
        the rows before and after (nothing would be left to train on).
    """
    if keep.any() or declaration.include is None:
        return
    raise DataError(
        f"the cohort rule of {declaration.path} (cohort.include: "
        f"{describe_condition(declaration.include)}) keeps none of the {len(keep):,} rows "
        f"({len(keep):,} before it, 0 after; a row where its column is missing is left out "
        "too): check the rule against this file's values",
        file=", ".join(rows.files),
    )


def label_notes(
    declaration: DatasetDeclaration,
    values: Mapping[str, pd.Series],
    keep: np.ndarray,
    variants: str | Sequence[str] | None,
    labels: pd.DataFrame,
) -> list[str]:
    """Each objective's label and exclusion in words, where each comes from, and their counts.

    Parameters
    ----------
    declaration
        The checked definition.
    values
        Typed columns.
    keep
        The rows in the cohort.
    variants
        The selected variant names (:func:`objective_label`).
    labels
        The kept rows' labels, one column per objective (:func:`objective_label`).

    Returns
    -------
    list[str]
        Per objective: its label and the variant it comes from (``default``: its own); how
        many kept rows its exclusion leaves unlabelled (by value, for an exclusion over one
        categorical column); a binary label's labelled rows and positive share.
    """
    notes = []
    for o in declaration.objectives:
        name, chosen = o.objective.name, o.labelling(variants)
        notes.append(
            f"{name} label: {describe_condition(chosen.label)} ({_origin(chosen.label_variant)})"
        )
        if chosen.exclude is not None:
            hit = (evaluate(chosen.exclude, values) == 1.0) & keep
            notes.append(
                f"{name}: {int(hit.sum()):,} rows have no label "
                f"({describe_condition(chosen.exclude)}); exclusion: "
                f"{_origin(chosen.exclude_variant)}{_by_value(chosen.exclude, values, hit)}"
            )
        if objective_kind(o.objective.kind).risk:
            label = labels[name].to_numpy(dtype=np.float64)
            labelled = label[~np.isnan(label)]
            share = f" ({labelled.mean():.1%})" if labelled.size else ""
            notes.append(
                f"{name}: {labelled.size:,} rows labelled, {int(labelled.sum()):,} positive{share}"
            )
    return notes


def _origin(variant: str | None) -> str:
    return "default" if variant is None else f"variant {variant}"


def _by_value(condition: Condition, values: Mapping[str, pd.Series], hit: np.ndarray) -> str:
    """``; by C: value (rows), …`` for an exclusion over one categorical column (else empty)."""
    if not isinstance(condition, Compare) or condition.op == "missing" or not hit.any():
        return ""
    column = values[condition.column]
    if pd.api.types.is_float_dtype(column.dtype):
        return ""
    counts = column[hit].value_counts(dropna=False, sort=False)
    order = sorted(counts.index, key=_code_order)
    parts = ", ".join(f"{v} ({int(counts[v]):,})" for v in order)
    return f"; by {condition.column}: {parts}"


def _code_order(value: object) -> tuple[int, float, str]:
    """Whole-number codes first, in numeric order; then other values as text."""
    text = str(value)
    return (0, float(text), "") if text.isdigit() else (1, 0.0, text)


def label_columns(declaration: DatasetDeclaration) -> tuple[str, ...]:
    """The columns labels, exclusions and the cohort's rule read: not needed to score a row."""
    from fedcare_core.data.declared.checks import condition_columns

    out: dict[str, None] = {}
    for o in declaration.objectives:
        labels = (o.label, *(v.label for v in o.variants.values()))
        for label in (x for x in labels if x is not None):
            names = label.columns if isinstance(label, Value) else tuple(condition_columns(label))
            out.update(dict.fromkeys(names))
        excludes = (o.exclude, *(v.exclude for v in o.variants.values()))
        for exclude in (x for x in excludes if x is not None):
            out.update(dict.fromkeys(condition_columns(exclude)))
    if declaration.include is not None:
        out.update(dict.fromkeys(condition_columns(declaration.include)))
    return tuple(c for c in out if declaration.columns[c].known_at is None)
