"""Built-in extractors: a release's raw tables turned into the one table a definition declares.

A definition whose ``source`` names an ``extractor`` instead of ``files`` declares the table that
extractor builds (MIMIC-III: one row per ICU stay, ``fedcare_core/data/definitions/mimic3.yaml``).
The extractor does the relational work a flat export would have done (joins, time windows,
aggregates, a patient's next admission); the definition then types, checks and labels its
columns as it would a hospital's own file.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedcare_core.data.declared.model import DatasetDeclaration
from fedcare_core.data.declared.reading import RawTable
from fedcare_core.errors import DataError

__all__ = ["EXTRACTORS", "Extractor", "extract_table", "extracted_columns"]


@dataclass(frozen=True)
class Extractor:
    """A built-in extractor, as import paths (``module:attribute``), imported when used.

    Parameters
    ----------
    function
        It: ``(folder, **options) -> RawTable``.
    columns
        The columns it gives (a definition may declare these only).
    checks
        Its raw tables' Great Expectations checks (the data gate's, before it runs).
    """

    function: str
    columns: str
    checks: str


#: The built-in extractors, by the name a definition's ``source.extractor`` gives.
EXTRACTORS: dict[str, Extractor] = {
    "mimic3": Extractor(
        "fedcare_core.data.mimic3.extract:extract_mimic3",
        "fedcare_core.data.mimic3.extract:EXTRACTED_COLUMNS",
        "data_checks.datasets:MIMIC3_CHECKS",
    ),
}


def _resolve(path: str) -> Any:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def extracted_columns(name: str) -> tuple[str, ...]:
    """The columns extractor ``name`` gives (a definition may declare these only)."""
    return tuple(_resolve(EXTRACTORS[name].columns))


def extract_table(
    declaration: DatasetDeclaration, root: Path | None, options: Mapping[str, Any]
) -> RawTable:
    """The table the declaration's extractor builds from the raw tables under ``root``.

    Parameters
    ----------
    declaration
        A definition whose source names an extractor.
    root
        The folder of the raw tables.
    options
        The extractor's options (e.g. MIMIC-III's ``cohort`` and ``benchmark_split``); None
        values are left to its defaults.

    Raises
    ------
    DataError
        No folder given, or the extractor's own refusal (file, column and rows named).
    """
    name = declaration.source.extractor
    assert name is not None
    if root is None:
        raise DataError(
            f"the dataset {declaration.name} is built by the {name} extractor from raw tables: "
            "pass --data-dir (a flow: data_dir) pointing at them"
        )
    extract = _resolve(EXTRACTORS[name].function)
    table: RawTable = extract(Path(root), **{k: v for k, v in options.items() if v is not None})
    declared = [*declaration.identifiers, *declaration.columns]
    return dataclasses.replace(table, frame=table.frame.loc[:, declared])
