"""A site's own definition: the federation's, with its private features and its column map.

A site declares columns of its own extract beyond the federation's common features
(``--private FILE.yaml``: :data:`PRIVATE_SCHEMA`) and how its export's names and codes map
onto the federation's (``--map FILE.yaml``: :data:`MAP_SCHEMA`). :func:`site_definition`
checks both against the federation's definition and the site's objectives (every refusal
names the file and the key) and writes the site's definition: the federation's, its private
columns added to the pools of the site's objectives that may see them (known by the
objective's prediction time), ``source.rename`` and each column's ``recode`` from the map. The
site loads its export, trains Stage 2 and packages its model by that definition; it is kept in
the site folder and named nowhere else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from copy import deepcopy
from pathlib import Path
from typing import Any

import yaml

from fedcare_core.data.declared.checks import check_column
from fedcare_core.data.declared.parse import (
    WHAT,
    column_of,
    declaration_from_document,
    definition_schema,
)
from fedcare_core.data.partition import AVAILABILITY
from fedcare_core.errors import DefinitionError
from fedcare_core.files.yaml_input import load_schema, parse_yaml, read_yaml_document

__all__ = ["MAP_SCHEMA", "PRIVATE_SCHEMA", "site_definition"]

#: The published schemas of a site's private-features file and column map, in this package.
PRIVATE_SCHEMA = "private.schema.json"
MAP_SCHEMA = "column_map.schema.json"
_PACKAGE = __package__ or "fedcare_core.data.declared"
_ORDER = {t: i for i, t in enumerate(AVAILABILITY)}


def site_definition(
    federation_text: str,
    objectives: Sequence[str],
    *,
    private: Path | None = None,
    column_map: Path | None = None,
) -> str:
    """The site's definition text (the federation's, with ``private`` and ``column_map``).

    Parameters
    ----------
    federation_text
        The federation's definition (its schema carries it).
    objectives
        The objectives the site pursues.
    private
        The site's private-features file (None: none).
    column_map
        The site's column map (None: its export uses the federation's names and codes).

    Returns
    -------
    str
        A definition file's text (YAML), checked as every definition is.

    Raises
    ------
    DefinitionError
        Naming the file (the private-features file or the map) and the key at fault.
    """
    document = deepcopy(parse_yaml(federation_text, "the federation's definition", WHAT))
    document["source"].pop("sha256", None)  # the coordinator's file, not the site's
    if private is not None:
        _add_private(document, objectives, private)
    if column_map is not None:
        _apply_map(document, column_map)
    text = yaml.safe_dump(document, sort_keys=False, allow_unicode=True)
    where = str(column_map or private or "the site's definition")
    declaration_from_document(document, text, Path(where))  # checked as a definition
    return text


def _add_private(document: dict[str, Any], objectives: Sequence[str], path: Path) -> None:
    schema = load_schema(_PACKAGE, PRIVATE_SCHEMA)
    doc, _ = read_yaml_document(path, "private-features file", schema, (definition_schema(),))
    file = str(path)
    taken = {*document["identifiers"].values(), *document["columns"]}
    predicted = {o["name"]: o["predicted_at"] for o in document["objectives"]}
    served = list(doc.get("objectives", objectives))
    for name in served:
        if name not in objectives:
            raise DefinitionError(
                f"{name!r} is not an objective this site pursues ({', '.join(objectives)})",
                file=file,
                key="objectives",
            )
    pools = document["partition"]["private"]
    for name, spec in doc["columns"].items():
        key = f"columns.{name}"
        if name in taken:
            raise DefinitionError(
                f"{name!r} is a column of the federation's definition already", file=file, key=key
            )
        known = spec.get("known_at")
        if known is None:
            raise DefinitionError(
                "a private column is a feature: declare when it is known (known_at)",
                file=file,
                key=f"{key}.known_at",
            )
        check_column(column_of(name, spec, file), spec, file)
        seeing = [o for o in served if _ORDER[known] <= _ORDER[predicted[o]]]
        if not seeing or ("objectives" in doc and len(seeing) < len(served)):
            late = next(o for o in served if o not in seeing)
            raise DefinitionError(
                f"known at {known}, after {late}'s prediction time ({predicted[late]})",
                file=file,
                key=f"{key}.known_at",
            )
        document["columns"][name] = dict(spec)
        for objective in seeing:
            pools.setdefault(objective, []).append(name)


def _apply_map(document: dict[str, Any], path: Path) -> None:
    schema = load_schema(_PACKAGE, MAP_SCHEMA)
    doc, _ = read_yaml_document(path, "column map", schema, (definition_schema(),))
    file = str(path)
    columns: Mapping[str, dict[str, Any]] = document["columns"]
    declared = {*document["identifiers"].values(), *columns}
    rename = {str(k): str(v) for k, v in doc.get("rename", {}).items()}
    for source, target in rename.items():
        if target not in declared:
            raise DefinitionError(
                f"{target!r} is not a column of the federation's definition (or yours)",
                file=file,
                key=f"rename.{source}",
            )
    if len(set(rename.values())) < len(rename):
        twice = next(t for t in rename.values() if list(rename.values()).count(t) > 1)
        raise DefinitionError(f"two of your columns are renamed {twice!r}", file=file, key="rename")
    for column, codes in doc.get("recode", {}).items():
        spec = columns.get(column)
        if spec is None or spec["type"] != "categorical":
            raise DefinitionError(
                f"{column!r} is not a categorical column of the federation's definition",
                file=file,
                key=f"recode.{column}",
            )
        vocabulary = [str(v) for v in spec.get("vocabulary", ())]
        for raw, value in codes.items():
            if vocabulary and str(value) not in vocabulary:
                raise DefinitionError(
                    f"{column!r} never holds {value!r}: its values are {', '.join(vocabulary)}",
                    file=file,
                    key=f"recode.{column}.{raw}",
                )
        spec["recode"] = {str(k): str(v) for k, v in codes.items()}
    if rename:
        document["source"]["rename"] = rename
