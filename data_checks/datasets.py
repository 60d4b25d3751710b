"""Each registered dataset's raw-table checks (``DatasetSpec.checks`` names them).

A dataset's :class:`RawChecks` reads its raw tables as the Great Expectations suites see them
and builds those suites; :mod:`data_checks.source_checks` runs them for every entry. A dataset
defined by a file, Diabetes 130-US among them, takes :class:`data_checks.declared.DeclaredChecks`
(its file read as text, its suite generated from its definition); MIMIC-III's tables are read
as pandas infers them, against the suites of :func:`data_checks.suites.mimic3_raw_suites`.
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


MIMIC3_CHECKS = _Mimic3Checks()
