"""The raw-table checks of a dataset defined by a file, generated from its definition.

One Great Expectations suite per declared dataset, built from what the definition declares:
every declared column and identifier present (others allowed), at least one row, the
identifiers and every column without ``gaps`` complete, the encounter identifier unique, numbers
written as numbers (whole numbers for integer columns), every declared vocabulary (with
``unseen_categories="refuse"``; a column's ``recode`` keys are its files' own codes) and every
declared form (``pattern``, for columns not recoded). The loader's own checks
(:mod:`fedcare_core.data.declared`) add the plausible ranges, the date-times and the labels,
with messages naming the rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from data_checks.expectations import Expect, failed_critical
from fedcare_core.data.declared.model import DatasetDeclaration

if TYPE_CHECKING:  # Great Expectations (seconds to import) only where a suite is built
    from great_expectations import ExpectationSuite

    from fedcare_core.data.declared.source import DeclaredSource

__all__ = ["DeclaredChecks", "declared_expectations"]

#: A number written as text (a sign, decimals and an exponent allowed).
_NUMBER = r"^\s*[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?\s*$"
#: A whole number written as text (``12`` or ``12.0``).
_WHOLE = r"^\s*[-+]?\d+(?:\.0*)?\s*$"


def declared_expectations(
    declaration: DatasetDeclaration, *, unseen_categories: str = "refuse"
) -> list[Expect]:
    """The raw table's expectations, in order (see the module's description)."""
    columns = (*declaration.identifiers, *declaration.columns)
    out = [
        Expect("ExpectTableColumnsToMatchSet", {"column_set": columns, "exact_match": False}),
        Expect("ExpectTableRowCountToBeBetween", {"min_value": 1}),
    ]
    for name in declaration.identifiers:
        out.append(Expect("ExpectColumnValuesToNotBeNull", {"column": name}))
    if declaration.encounter is not None:
        out.append(Expect("ExpectColumnValuesToBeUnique", {"column": declaration.encounter}))
    for column in declaration.columns.values():
        name = column.name
        if not column.gaps:
            out.append(Expect("ExpectColumnValuesToNotBeNull", {"column": name}))
        if column.numeric:
            shape = _WHOLE if column.type == "integer" else _NUMBER
            out.append(Expect("ExpectColumnValuesToMatchRegex", {"column": name, "regex": shape}))
        recode = column.recode or {}
        if column.vocabulary is not None and unseen_categories == "refuse":
            # The files' own codes (recode) are as expected as the vocabulary's.
            allowed = (*column.vocabulary, *(k for k in recode if k not in column.vocabulary))
            out.append(
                Expect("ExpectColumnValuesToBeInSet", {"column": name, "value_set": allowed})
            )
        if column.pattern is not None and not recode:
            regex = f"^(?:{column.pattern})$"
            out.append(Expect("ExpectColumnValuesToMatchRegex", {"column": name, "regex": regex}))
    return out


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

    def suites(self, unseen_categories: str) -> dict[str, ExpectationSuite]:
        """The table's suite."""
        from great_expectations import ExpectationSuite

        from data_checks.suites import gx_expectation

        expectations = declared_expectations(self.declaration, unseen_categories=unseen_categories)
        return {
            self.table: ExpectationSuite(
                name=self.table, expectations=[gx_expectation(e) for e in expectations]
            )
        }

    def certainly_pass(self, source: Path, unseen_categories: str) -> bool:
        """The suite's expectations run vectorised (:mod:`data_checks.expectations`)."""
        table = self.read(source)[self.table]
        expectations = declared_expectations(self.declaration, unseen_categories=unseen_categories)
        return not failed_critical(table, expectations)
