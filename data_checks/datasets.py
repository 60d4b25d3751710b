"""Each registered dataset's raw-table checks (``DatasetSpec.checks`` names them).

A dataset's :class:`RawChecks` reads its raw tables as the Great Expectations suites see them
(Diabetes 130's file as text, MIMIC-III's tables as read) and builds those suites from the
dataset's documented definition; :mod:`data_checks.source_checks` runs them for every entry.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import pandas as pd

if TYPE_CHECKING:  # Great Expectations (seconds to import) only where a suite is built
    from great_expectations import ExpectationSuite


class RawChecks(Protocol):
    """How a dataset's raw tables are read and checked."""

    def read(self, source: Path) -> dict[str, pd.DataFrame]:
        """The raw tables at ``source`` (the dataset source's ``locate``), by suite key."""
        ...

    def suites(self, unseen_categories: str) -> dict[str, ExpectationSuite]:
        """One suite per table, keyed like :meth:`read`."""
        ...

    def certainly_pass(self, source: Path, unseen_categories: str) -> bool:
        """Whether every critical expectation passes, judged without Great Expectations.

        False when one fails or cannot be judged so: Great Expectations then decides.
        """
        ...


class _Diabetes130Checks:
    """``diabetic_data.csv``, read as text, against its one suite."""

    def read(self, source: Path) -> dict[str, pd.DataFrame]:
        """The file as the suite sees it."""
        from data_checks.tables import DIABETES130_TABLE, read_diabetes130_raw

        return {DIABETES130_TABLE: read_diabetes130_raw(source)}

    def suites(self, unseen_categories: str) -> dict[str, ExpectationSuite]:
        """The file's suite."""
        from data_checks.suites import diabetes130_raw_suite
        from data_checks.tables import DIABETES130_TABLE

        return {DIABETES130_TABLE: diabetes130_raw_suite(unseen_categories=unseen_categories)}

    def certainly_pass(self, source: Path, unseen_categories: str) -> bool:
        """The suite's expectations run vectorised (:mod:`data_checks.expectations`)."""
        from data_checks.expectations import diabetes130_raw_expectations, failed_critical
        from data_checks.tables import read_diabetes130_raw

        table = read_diabetes130_raw(source)
        expectations = diabetes130_raw_expectations(unseen_categories=unseen_categories)
        return not failed_critical(table, expectations)


class _Mimic3Checks:
    """The MIMIC-III tables the loader reads, one suite each."""

    def read(self, source: Path) -> dict[str, pd.DataFrame]:
        """The tables as the suites see them."""
        from data_checks.tables import read_mimic3_raw

        return read_mimic3_raw(source)

    def suites(self, unseen_categories: str) -> dict[str, ExpectationSuite]:
        """One suite per table."""
        from data_checks.suites import mimic3_raw_suites

        return mimic3_raw_suites(unseen_categories=unseen_categories)

    def certainly_pass(self, source: Path, unseen_categories: str) -> bool:
        """Not judged without Great Expectations."""
        return False


DIABETES130_CHECKS = _Diabetes130Checks()
MIMIC3_CHECKS = _Mimic3Checks()
