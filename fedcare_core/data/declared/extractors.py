"""Built-in extractors: a release's raw tables turned into the one table a definition declares.

A definition whose ``source`` names an ``extractor`` instead of ``files`` declares the table that
extractor builds (MIMIC-III: one row per ICU stay, ``fedcare_core/data/definitions/mimic3.yaml``).
The extractor does the relational work a flat export would have done (joins, time windows,
aggregates, a patient's next admission); the definition then types, checks and labels its
columns as it would a hospital's own file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedcare_core.data.declared.model import DatasetDeclaration
from fedcare_core.data.declared.reading import RawTable
from fedcare_core.errors import DataError
from fedcare_core.plugins import entry_names, load_entry

__all__ = ["Extractor", "extract_table", "extracted_columns", "extractor_names", "get_extractor"]

#: The extension kind of extractors (:data:`fedcare_core.plugins.GROUPS`).
KIND = "extractor"


@dataclass(frozen=True)
class Extractor:
    """An extractor, declared as an entry point of the ``fedcare.extractors`` group.

    Parameters
    ----------
    function
        It: ``(folder, **options) -> RawTable``.
    columns
        The columns it gives (a definition may declare these only).
    checks
        The name of its raw tables' checks (a ``fedcare.raw_checks`` entry: the data gate's,
        before it runs).
    """

    function: Callable[..., RawTable]
    columns: tuple[str, ...]
    checks: str


def extractor_names() -> tuple[str, ...]:
    """The installed extractors' names (a definition's ``source.extractor`` gives one)."""
    return entry_names(KIND)


def get_extractor(name: str) -> Extractor:
    """The installed extractor ``name``, imported now.

    Raises
    ------
    PluginError
        No extractor of that name is installed (the message lists those that are).
    """
    extractor = load_entry(KIND, name)
    if not isinstance(extractor, Extractor):
        raise DataError(f"the {KIND} entry {name!r} loads no Extractor")
    return extractor


def extracted_columns(name: str) -> tuple[str, ...]:
    """The columns extractor ``name`` gives (a definition may declare these only)."""
    return tuple(get_extractor(name).columns)


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
    given = {k: v for k, v in options.items() if v is not None}
    table = get_extractor(name).function(Path(root), **given)
    declared = [*declaration.identifiers, *declaration.columns]
    return dataclasses.replace(table, frame=table.frame.loc[:, declared])
