"""Datasets defined by a file: a hospital's own extract, with no Python written.

A definition file (YAML, following the published JSON Schema ``definition.schema.json`` of this
package; ``fedcare data schema`` prints it) declares the source files, the identifier columns,
every column's type, vocabulary or plausible range and whether it may be missing, the
objectives with their labels over columns and prediction times, every feature's availability
time and the default common/private partition. :func:`read_definition` reads and checks one
(:mod:`.parse`, :mod:`.checks`); the registry (:func:`fedcare_core.data.registry.get_dataset`)
makes it a dataset, so that every entry taking ``--dataset NAME`` takes ``--dataset FILE.yaml``
too.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from fedcare_core.data.declared.model import DatasetDeclaration
from fedcare_core.data.declared.parse import definition_schema, read_definition
from fedcare_core.data.declared.source import DeclaredSource

__all__ = [
    "DatasetDeclaration",
    "DeclaredSource",
    "declared_source_of_text",
    "definition_schema",
    "read_definition",
]


@lru_cache(maxsize=16)
def declared_source_of_text(text: str, where: str) -> DeclaredSource:
    """The source of a definition held as text (a packaged model's), checked as a file is.

    Raises
    ------
    DefinitionError
        An invalid definition, naming ``where`` and the key.
    """
    from fedcare_core.data.declared.parse import WHAT, declaration_from_document
    from fedcare_core.files.yaml_input import check_against_schema, parse_yaml

    document = parse_yaml(text, where, WHAT)
    check_against_schema(document, definition_schema(), where, WHAT)
    return DeclaredSource(declaration_from_document(document, text, Path(where)))
