"""Datasets defined by a file: a hospital's own extract, with no Python written.

A definition file (YAML, following the published JSON Schema ``definition.schema.json`` of this
package; ``fedcare data schema`` prints it) declares the source files, the identifier columns,
every column's type, vocabulary or plausible range and whether it may be missing, the
objectives with their labels over columns and prediction times, every feature's availability
time and the default common/private partition. :func:`read_definition` reads and checks one
(:mod:`.parse`, :mod:`.checks`); :func:`declared_spec` makes it a dataset of the registry, so
that every entry taking ``--dataset NAME`` takes ``--dataset FILE.yaml`` too.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from fedcare_core.data.declared.model import DatasetDeclaration
from fedcare_core.data.declared.parse import definition_schema, read_definition
from fedcare_core.data.declared.source import DeclaredSource
from fedcare_core.data.registry import DatasetSpec
from fedcare_core.errors import DefinitionError

__all__ = [
    "DatasetDeclaration",
    "DeclaredSource",
    "declared_source_of_text",
    "declared_spec",
    "definition_schema",
    "read_definition",
    "register_definition_text",
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


def declared_spec(path: str | Path) -> DatasetSpec:
    """The registry's spec of the dataset defined by the file ``path`` (read once per version).

    Raises
    ------
    DefinitionError
        A missing or invalid definition, naming the file and the key.
    """
    p = Path(path).expanduser()
    try:
        stat = p.stat()
        version: tuple[int, int] = (stat.st_mtime_ns, stat.st_size)
    except OSError:
        version = (0, 0)
    return _spec(str(p), version)


@lru_cache(maxsize=32)
def _spec(path: str, version: tuple[int, int]) -> DatasetSpec:
    return _spec_of(DeclaredSource(read_definition(path)))


def register_definition_text(text: str, where: str) -> str:
    """Register the dataset a definition's text defines under its name; return the name.

    A federation's schema carries its dataset's definition: every party registers it, so the
    configuration's ``data.dataset`` names it wherever the schema is read.

    Raises
    ------
    DefinitionError
        An invalid definition, or a name a built-in dataset (or another definition) holds.
    """
    from fedcare_core.data.registry import REGISTRY, register_dataset

    spec = _spec_of(declared_source_of_text(text, where))
    held = REGISTRY.get(spec.name)
    if held is not None and held.definition_text != text:
        raise DefinitionError(
            f"dataset {spec.name!r} is already defined here (a built-in dataset, or another "
            "definition of that name): rename it",
            file=where,
            key="name",
        )
    register_dataset(spec)
    return spec.name


def _spec_of(source: DeclaredSource) -> DatasetSpec:
    from fedcare_core.data.declared.source import DECLARED_FEATURE_SETS
    from fedcare_core.data.registry import REGISTRY

    declaration = source.declaration
    held = REGISTRY.get(declaration.name)
    if held is not None and held.definition_text is None:
        raise DefinitionError(
            f"{declaration.name!r} is a built-in dataset's name: give yours another",
            file=str(declaration.path),
            key="name",
        )
    files = ", ".join(declaration.source.files)
    return DatasetSpec(
        declaration.name,
        declaration.title,
        source,
        "data_checks.declared:DeclaredChecks",
        feature_sets=DECLARED_FEATURE_SETS,
        objectives=len(declaration.objectives),
        model_input=f"rows in the columns of {files} ({declaration.path.name} declares them)",
        definition_text=declaration.text,
    )
