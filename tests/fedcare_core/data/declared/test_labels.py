"""Labels, exclusions and cohort rules: three-valued conditions over typed columns."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
import pytest

from fedcare_core.data.cohort import Objective
from fedcare_core.data.declared import read_definition
from fedcare_core.data.declared.labels import evaluate, label_columns, objective_label
from fedcare_core.data.declared.model import (
    Combine,
    Compare,
    Condition,
    DeclaredObjective,
    Value,
)
from fedcare_core.data.declared.reading import TableRows
from fedcare_core.errors import DataError
from tests.fedcare_core.data.declared.helpers import EXAMPLE_DEFINITION, SMALL_DEFINITION, write

nan = np.nan
T, F, U = 1.0, 0.0, nan


def _truth(values: list[float]) -> pd.Series:
    """A numeric column whose ``eq 1`` is the given truth values (NaN: unknown)."""
    return pd.Series([nan if np.isnan(v) else v for v in values], dtype="float64")


# every pair of (a, b) in {T, F, U}²
A = [T, T, T, F, F, F, U, U, U]
B = [T, F, U, T, F, U, T, F, U]
VALUES = {"a": _truth(A), "b": _truth(B)}
IS_A = Compare("a", "eq", 1)
IS_B = Compare("b", "eq", 1)


def _same(got: np.ndarray, expected: list[float]) -> None:
    np.testing.assert_array_equal(got, np.asarray(expected, dtype=np.float64))


def test_a_comparison_with_a_missing_value_is_unknown() -> None:
    _same(evaluate(IS_A, VALUES), A)


def test_all_is_kleene_and() -> None:
    _same(evaluate(Combine("all", (IS_A, IS_B)), VALUES), [T, F, U, F, F, F, U, F, U])


def test_any_is_kleene_or() -> None:
    _same(evaluate(Combine("any", (IS_A, IS_B)), VALUES), [T, T, T, T, F, U, T, U, U])


def test_not_swaps_true_and_false_only() -> None:
    _same(evaluate(Combine("not", (IS_A,)), VALUES), [F, F, F, T, T, T, U, U, U])


def test_de_morgan() -> None:
    left = evaluate(Combine("not", (Combine("all", (IS_A, IS_B)),)), VALUES)
    right = evaluate(Combine("any", (Combine("not", (IS_A,)), Combine("not", (IS_B,)))), VALUES)
    _same(left, list(right))


def test_all_and_any_of_one_and_of_three() -> None:
    _same(evaluate(Combine("all", (IS_A,)), VALUES), A)
    _same(evaluate(Combine("any", (IS_B,)), VALUES), B)
    is_c = Compare("c", "eq", 1)
    values = {**VALUES, "c": _truth([F, T, T, T, T, T, T, T, T])}
    _same(evaluate(Combine("all", (IS_A, IS_B, is_c)), values), [F, F, U, F, F, F, U, F, U])
    _same(evaluate(Combine("any", (IS_A, IS_B, is_c)), values), [T, T, T, T, T, T, T, T, T])


NUMBERS = {"x": pd.Series([1.0, 2.0, 3.0, nan], dtype="float64")}
CATEGORIES = {"s": pd.Series(["a", "b", "c", nan], dtype="str")}


@pytest.mark.parametrize(
    ("op", "value", "expected"),
    [
        ("eq", 2, [F, T, F, U]),
        ("ne", 2, [T, F, T, U]),
        ("lt", 2, [T, F, F, U]),
        ("le", 2, [T, T, F, U]),
        ("gt", 2, [F, F, T, U]),
        ("ge", 2, [F, T, T, U]),
        ("ge", 1.5, [F, T, T, U]),
        ("in", (1, 3), [T, F, T, U]),
        ("not_in", (1, 3), [F, T, F, U]),
        ("missing", True, [F, F, F, T]),
        ("missing", False, [T, T, T, F]),
    ],
)
def test_on_numbers(op: str, value: object, expected: list[float]) -> None:
    _same(evaluate(Compare("x", op, value), NUMBERS), expected)


@pytest.mark.parametrize(
    ("op", "value", "expected"),
    [
        ("eq", "b", [F, T, F, U]),
        ("ne", "b", [T, F, T, U]),
        ("in", ("a", "c"), [T, F, T, U]),
        ("not_in", ("a", "c"), [F, T, F, U]),
        ("missing", True, [F, F, F, T]),
        ("missing", False, [T, T, T, F]),
    ],
)
def test_on_categories(op: str, value: object, expected: list[float]) -> None:
    _same(evaluate(Compare("s", op, value), CATEGORIES), expected)


def test_a_category_written_as_a_number() -> None:
    codes = {"s": pd.Series(["1", "2", nan], dtype="str")}
    _same(evaluate(Compare("s", "eq", 2), codes), [F, T, U])
    _same(evaluate(Compare("s", "in", (1, 2)), codes), [T, T, U])


def test_a_missing_category_is_never_equal_to_nan_text() -> None:
    _same(evaluate(Compare("s", "eq", "nan"), CATEGORIES), [F, F, F, U])


WHERE = TableRows(("rows.csv",), np.zeros(4, dtype=np.int64), np.arange(1, 5))


def _objective(
    label: Condition | Value,
    exclude: Condition | None = None,
    kind: Literal["binary", "regression"] = "binary",
) -> DeclaredObjective:
    return DeclaredObjective(Objective("o", kind), "admission", label, exclude)


def test_a_binary_label_is_its_condition() -> None:
    _same(objective_label(_objective(Compare("x", "ge", 2)), NUMBERS, WHERE), [F, T, T, U])


def test_an_exclusion_makes_the_label_missing() -> None:
    values = {**NUMBERS, **CATEGORIES}
    o = _objective(Compare("x", "ge", 2), Compare("s", "in", ("b", "c")))
    _same(objective_label(o, values, WHERE), [F, U, U, U])


def test_an_unknown_exclusion_excludes_nothing() -> None:
    values = {**NUMBERS, "s": pd.Series([nan, nan, "c", "c"], dtype="str")}
    o = _objective(Compare("x", "ge", 2), Compare("s", "eq", "c"))
    _same(objective_label(o, values, WHERE), [F, T, U, U])


def test_a_regression_value() -> None:
    o = _objective(Value(("x",)), kind="regression")
    _same(objective_label(o, NUMBERS, WHERE), [1.0, 2.0, 3.0, U])


def test_days_and_hours_between() -> None:
    start = pd.Series(
        pd.to_datetime(
            pd.Series(["2024-01-01 00:00", "2024-01-01 06:00", None, "2024-02-28 00:00"])
        )
    )
    end = pd.Series(
        pd.to_datetime(
            pd.Series(["2024-01-02 12:00", "2024-01-01 06:00", "2024-01-01 00:00", None])
        )
    )
    values = {"in": start, "out": end}
    days = _objective(Value(("in", "out"), "days"), kind="regression")
    _same(objective_label(days, values, WHERE), [1.5, 0.0, U, U])
    hours = _objective(Value(("in", "out"), "hours"), kind="regression")
    _same(objective_label(hours, values, WHERE), [36.0, 0.0, U, U])


def test_a_negative_regression_label_is_refused() -> None:
    start = pd.Series(pd.to_datetime(["2024-01-02", "2024-01-01", "2024-01-05", "2024-01-01"]))
    end = pd.Series(pd.to_datetime(["2024-01-03", "2023-12-31", "2024-01-04", "2024-01-01"]))
    o = _objective(Value(("in", "out"), "days"), kind="regression")
    with pytest.raises(DataError) as ei:
        objective_label(o, {"in": start, "out": end}, WHERE)
    assert (ei.value.file, ei.value.column, ei.value.rows) == ("rows.csv", "out", (2, 3))
    assert "negative" in ei.value.message and "days from in to out" in ei.value.message


def test_an_excluded_row_still_needs_a_valid_regression_label() -> None:
    values = {"x": pd.Series([1.0, -2.0, 3.0, 4.0]), **CATEGORIES}
    o = _objective(Value(("x",)), Compare("s", "eq", "b"), kind="regression")
    with pytest.raises(DataError) as ei:
        objective_label(o, values, WHERE)
    assert ei.value.rows == (2,)


def test_label_columns_of_the_example() -> None:
    d = read_definition(EXAMPLE_DEFINITION)
    assert label_columns(d) == ("DISCH_DISPO", "READMIT_30D", "ADMIT_DTTM", "DISCH_DTTM")


def test_label_columns_of_the_small_definition(tmp_path: Path) -> None:
    d = read_definition(write(tmp_path / "d.yaml", SMALL_DEFINITION))
    assert label_columns(d) == ("DISPO", "READMIT", "ADMIT", "DISCH")
