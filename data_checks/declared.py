"""The raw-table checks of a dataset defined by a file, generated from its definition.

One Great Expectations suite per declared dataset (Diabetes 130-US's too), built from what the
definition declares:

* every declared column and identifier present (others allowed), at least one row;
* the identifiers complete and of the declared form (``identifiers.pattern``), the encounter
  identifier unique;
* every column without ``gaps`` complete; a column with ``gaps`` and ``present_at_least``
  holding a value in at least that share of rows (a *warning*, never a refusal: a hospital's
  export may have more gaps than the file the share was measured on);
* integers written as whole numbers within their ``range``; other numbers written as numbers;
  intervals (``parse: interval_midpoint``) in their vocabulary, or shaped as intervals;
* every declared vocabulary (a feature's with ``unseen_categories="refuse"`` only; a label's
  source and a vocabulary of intervals whatever the policy, as the loader; a column's
  ``recode`` keys are its files' own codes) and every declared form (``pattern``, for columns
  not recoded).

The loader's own checks (:mod:`fedcare_core.data.declared`) add the float ranges, the
date-times, the rules and the labels, with messages naming the rows.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from data_checks.expectations import Expect, failed_critical
from fedcare_core.data.declared.model import Column, DatasetDeclaration

if TYPE_CHECKING:  # Great Expectations (seconds to import) only where a suite is built
    from great_expectations import ExpectationSuite

    from fedcare_core.data.declared.source import DeclaredSource

__all__ = ["DeclaredChecks", "declared_expectations", "integer_regex"]

#: A number written as text (a sign, decimals and an exponent allowed).
_NUMBER = r"^\s*[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?\s*$"
#: A whole number written as text (``12`` or ``12.0``).
_WHOLE = r"^\s*[-+]?\d+(?:\.0*)?\s*$"
#: An interval such as ``[70-80)``, as the loader reads one (``declared.values``).
_INTERVAL = r"^\s*\[\s*-?\d+(?:\.\d+)?\s*-\s*-?\d+(?:\.\d+)?\s*\)\s*$"


def declared_expectations(
    declaration: DatasetDeclaration, *, unseen_categories: str = "refuse"
) -> list[Expect]:
    """The raw table's expectations, in order (see the module's description).

    Parameters
    ----------
    declaration
        The dataset's definition.
    unseen_categories
        ``"refuse"``: every declared vocabulary is expected; ``"other"`` (the loader then
        encodes a feature's unseen values as ``other``): a feature's vocabulary is not.

    Returns
    -------
    list of Expect
        The table's, then each identifier's, then each column's, in declared order.
    """
    columns = (*declaration.identifiers, *declaration.columns)
    out = [
        Expect("ExpectTableColumnsToMatchSet", {"column_set": columns, "exact_match": False}),
        Expect("ExpectTableRowCountToBeBetween", {"min_value": 1}),
    ]
    for name in declaration.identifiers:
        out.append(Expect("ExpectColumnValuesToNotBeNull", {"column": name}))
        if declaration.identifier_pattern is not None:
            regex = f"^(?:{declaration.identifier_pattern})$"
            out.append(Expect("ExpectColumnValuesToMatchRegex", {"column": name, "regex": regex}))
    if declaration.encounter is not None:
        out.append(Expect("ExpectColumnValuesToBeUnique", {"column": declaration.encounter}))
    for column in declaration.columns.values():
        out.extend(_column_expectations(column, unseen_categories))
    return out


def _column_expectations(column: Column, unseen_categories: str) -> list[Expect]:
    """One column's expectations: presence, the shape of its values, its vocabulary, its form."""
    name = column.name
    out = []
    if not column.gaps:
        out.append(Expect("ExpectColumnValuesToNotBeNull", {"column": name}))
    elif column.present_at_least is not None:
        share = {"column": name, "mostly": column.present_at_least}
        out.append(Expect("ExpectColumnValuesToNotBeNull", share, warning=True))
    shape = _shape(column)
    if shape is not None:
        out.append(Expect("ExpectColumnValuesToMatchRegex", {"column": name, "regex": shape}))
    recode = column.recode or {}
    # The loader refuses a value outside the vocabulary of intervals or of a label's source
    # whatever the policy (which is about encoding features).
    closed = column.numeric or column.known_at is None
    if column.vocabulary is not None and (closed or unseen_categories == "refuse"):
        # The files' own codes (recode) are as expected as the vocabulary's.
        allowed = (*column.vocabulary, *(k for k in recode if k not in column.vocabulary))
        out.append(Expect("ExpectColumnValuesToBeInSet", {"column": name, "value_set": allowed}))
    if column.pattern is not None and not recode:
        regex = f"^(?:{column.pattern})$"
        out.append(Expect("ExpectColumnValuesToMatchRegex", {"column": name, "regex": regex}))
    return out


def _shape(column: Column) -> str | None:
    """How a number is written (an integer: within its range); None: not a number, a vocabulary."""
    if column.parse == "interval_midpoint":
        return _INTERVAL if column.vocabulary is None else None
    if column.type == "integer":
        low, high = column.range or (-math.inf, math.inf)
        if math.isfinite(low) and math.isfinite(high):
            return integer_regex(math.ceil(low), math.floor(high))
        return _WHOLE
    return _NUMBER if column.numeric else None


def integer_regex(low: int, high: int) -> str:
    """A regular expression of the whole numbers from ``low`` to ``high``, written as text.

    As the loader reads a whole number: blanks around it, a sign, leading zeros and a
    ``.0`` allowed (``' +007.0'`` is 7); no exponent.

    Parameters
    ----------
    low, high
        The inclusive bounds (``low > high``: no number matches).

    Returns
    -------
    str
        Anchored at both ends, its groups non-capturing.
    """
    parts = []
    if high >= 0 and low <= high:
        parts.append(rf"\+?0*(?:{'|'.join(_digit_ranges(max(low, 0), high))})")
    if low < 0 and low <= high:
        parts.append(rf"-0*(?:{'|'.join(_digit_ranges(max(-high, 1), -low))})")
    if low <= 0 <= high:
        parts.append("-0+")  # minus zero
    body = "|".join(parts) or "(?!)"
    return rf"^\s*(?:{body})(?:\.0*)?\s*$"


def _digit_ranges(low: int, high: int) -> list[str]:
    """Patterns of the numbers ``low``..``high`` (``0 <= low <= high``), no leading zeros."""
    out = []
    for width in range(len(str(low)), len(str(high)) + 1):
        first = max(low, 10 ** (width - 1) if width > 1 else 0)
        last = min(high, 10**width - 1)
        out += _same_width(str(first), str(last))
    return out


def _same_width(low: str, high: str) -> list[str]:
    """Patterns of the digit strings ``low``..``high``, of one width (``low <= high``)."""
    if low == high:
        return [low]
    if len(low) == 1:
        return [f"[{low}-{high}]"]
    if low[0] == high[0]:
        return [low[0] + p for p in _same_width(low[1:], high[1:])]
    rest = len(low) - 1
    head: list[str] = []
    tail: list[str] = []
    first, last = int(low[0]), int(high[0])
    if low[1:] != "0" * rest:  # low[0] followed by low[1:] .. 9…9
        head = [low[0] + p for p in _same_width(low[1:], "9" * rest)]
        first += 1
    if high[1:] != "9" * rest:  # high[0] followed by 0…0 .. high[1:]
        tail = [high[0] + p for p in _same_width("0" * rest, high[1:])]
        last -= 1
    if first <= last:
        digit = str(first) if first == last else f"[{first}-{last}]"
        head.append(digit + (r"\d" if rest == 1 else rf"\d{{{rest}}}"))
    return head + tail


class DeclaredChecks:
    """A declared dataset's raw table and its one suite.

    Parameters
    ----------
    source
        The dataset's source (its definition, where its files are).
    """

    def __init__(self, source: DeclaredSource) -> None:
        self.declaration = source.declaration

    @property
    def table(self) -> str:
        """The suite's (and the table's) name: ``<dataset>_raw``."""
        return f"{self.declaration.name}_raw"

    def read(self, source: Path) -> dict[str, pd.DataFrame]:
        """The source files as one table, as read (text from CSV)."""
        from fedcare_core.data.declared.reading import locate_files, read_raw_table

        files = locate_files(self.declaration, source)
        raw = read_raw_table(self.declaration, files, verify_checksum=False)
        return {self.table: raw.frame}

    def expectations(self, unseen_categories: str) -> list[Expect]:
        """The suite's expectations (:func:`declared_expectations`)."""
        return declared_expectations(self.declaration, unseen_categories=unseen_categories)

    def suites(self, unseen_categories: str) -> dict[str, ExpectationSuite]:
        """The table's suite."""
        from great_expectations import ExpectationSuite

        from data_checks.suites import gx_expectation

        expectations = [gx_expectation(e) for e in self.expectations(unseen_categories)]
        return {self.table: ExpectationSuite(name=self.table, expectations=expectations)}

    def certainly_pass(self, source: Path, unseen_categories: str) -> bool:
        """The suite's expectations run vectorised (:mod:`data_checks.expectations`)."""
        table = self.read(source)[self.table]
        return not failed_critical(table, self.expectations(unseen_categories))
