"""Reading a dataset definition file into a :class:`~.model.DatasetDeclaration`.

The file is YAML checked against the published JSON Schema
(``fedcare_core/data/declared/definition.schema.json``: keys, types, forms), then against what
a schema cannot say (:mod:`.checks`: a label over a column that is not declared, a feature known
after its objective's prediction time, names written twice, a vocabulary with repeats). Every
refusal is one :class:`~fedcare_core.errors.DefinitionError` naming the file and the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from fedcare_core.data.cohort import Objective
from fedcare_core.data.declared.checks import check_declaration
from fedcare_core.data.declared.model import (
    Column,
    ColumnType,
    Combine,
    Compare,
    Condition,
    DatasetDeclaration,
    DeclaredObjective,
    Groups,
    Rule,
    Source,
    Value,
    Variant,
)
from fedcare_core.data.partition import FeaturePartition
from fedcare_core.data.subgroups import SensitiveAttribute
from fedcare_core.errors import DefinitionError
from fedcare_core.files.yaml_input import load_schema, read_yaml_document

__all__ = ["DEFINITION_SCHEMA", "WHAT", "column_of", "definition_schema", "read_definition"]

#: The published schema's file name, in this package.
DEFINITION_SCHEMA = "definition.schema.json"
#: How messages call the file.
WHAT = "dataset definition"


def definition_schema() -> dict[str, Any]:
    """The published JSON Schema of a dataset definition file."""
    return load_schema(__package__ or "fedcare_core.data.declared", DEFINITION_SCHEMA)


def read_definition(path: str | Path) -> DatasetDeclaration:
    """The dataset definition in ``path``, checked.

    Parameters
    ----------
    path
        A YAML file following the published schema (:func:`definition_schema`).

    Returns
    -------
    DatasetDeclaration
        The definition, every cross-reference checked.

    Raises
    ------
    DefinitionError
        Naming the file and the key at fault.
    """
    document, text = read_yaml_document(path, WHAT, definition_schema())
    return declaration_from_document(document, text, Path(path))


def declaration_from_document(
    document: Mapping[str, Any], text: str, path: Path
) -> DatasetDeclaration:
    """The declaration of a schema-valid ``document`` read from ``path`` (then checked).

    Raises
    ------
    DefinitionError
        What the schema cannot say (:func:`~.checks.check_declaration`).
    """
    file = str(path)
    columns = {name: column_of(name, spec, file) for name, spec in document["columns"].items()}
    partition_doc = document["partition"]
    objectives = tuple(_objective(o) for o in document["objectives"])
    declaration = DatasetDeclaration(
        path=path,
        text=text,
        name=document["name"],
        title=document.get("title", document["name"]),
        description=document.get("description", ""),
        source=_source(document["source"]),
        patient=document["identifiers"]["patient"],
        encounter=document["identifiers"].get("encounter"),
        strata=document.get("strata"),
        include=_condition(document["cohort"]["include"]) if "cohort" in document else None,
        columns=columns,
        objectives=objectives,
        partition=FeaturePartition(
            common=tuple(partition_doc["common"]),
            private=_pools(objectives, partition_doc["private"]),
            private_only=tuple(
                c.name
                for c in columns.values()
                if c.known_at is not None
                and c.type == "categorical"
                and c.feature_vocabulary is None
            ),
        ),
        partition_ignores_times=partition_doc.get("ignores_prediction_times", ""),
        moves={k: tuple(v) for k, v in partition_doc.get("moves_at_prediction_time", {}).items()},
        identifier_pattern=document["identifiers"].get("pattern"),
        identifier_form=document["identifiers"].get("form"),
        numbering=document["identifiers"].get("numbering", "first_seen"),
        rules=tuple(
            Rule(_condition(r["when"]), r["column"], r["message"])
            for r in document.get("refuse", ())
        ),
        sensitive=tuple(
            _sensitive(str(name), spec, file)
            for name, spec in document.get("sensitive", {}).items()
        ),
    )
    check_declaration(declaration, document)
    return declaration


def _pools(
    objectives: tuple[DeclaredObjective, ...], doc: Mapping[str, Any]
) -> dict[str, tuple[str, ...]]:
    """Every objective's private pool (empty where none is written), then the pools written.

    An objective without a pool still sees the common features: its prediction time is then
    checked against them, and ``--features admission`` limits them for it.
    """
    pools: dict[str, tuple[str, ...]] = {o.objective.name: () for o in objectives}
    pools.update({k: tuple(v) for k, v in doc.items()})
    return pools


def _sensitive(name: str, doc: Mapping[str, Any], file: str) -> SensitiveAttribute:
    """The sensitive attribute ``name`` (its column is checked by :mod:`.checks`)."""
    try:
        return SensitiveAttribute(
            name, doc["column"], tuple(float(b) for b in doc.get("bands", ()))
        )
    except ValueError as exc:
        raise DefinitionError(str(exc), file=file, key=f"sensitive.{name}.bands") from None


def _source(doc: Mapping[str, Any]) -> Source:
    return Source(
        files=tuple(doc.get("files", ())),
        format=doc.get("format"),
        missing_values=tuple(doc.get("missing_values", Source.missing_values)),
        delimiter=doc.get("delimiter", ","),
        sha256=doc.get("sha256"),
        rename={str(k): str(v) for k, v in doc.get("rename", {}).items()},
        missing_hint=doc.get("missing_hint", ""),
        url=doc.get("url"),
        extractor=doc.get("extractor"),
    )


def column_of(name: str, doc: Mapping[str, Any], file: str) -> Column:
    """The column ``name`` declared by ``doc`` (schema-valid; checked by the caller)."""
    vocabulary = doc.get("vocabulary")
    groups = doc.get("groups")
    low_high = doc.get("range")
    recode = doc.get("recode")
    share = doc.get("present_at_least")
    return Column(
        name=name,
        type=cast(ColumnType, doc["type"]),
        vocabulary=None if vocabulary is None else tuple(str(v) for v in vocabulary),
        pattern=doc.get("pattern"),
        groups=None if groups is None else _groups(groups),
        range=None if low_high is None else (float(low_high[0]), float(low_high[1])),
        format=doc.get("format"),
        gaps=bool(doc.get("gaps", False)),
        known_at=doc.get("known_at"),
        description=doc.get("description", ""),
        unit=doc.get("unit", ""),
        recode=None if recode is None else {str(k): str(v) for k, v in recode.items()},
        integer_codes=bool(doc.get("integer_codes", False)),
        parse=doc.get("parse"),
        form=doc.get("form"),
        present_at_least=None if share is None else float(share),
    )


def _groups(doc: Mapping[str, Any]) -> Groups:
    return Groups(
        by=doc["by"],
        groups=tuple((str(name), tuple(members)) for name, members in doc["map"].items()),
        other=doc.get("other", "other"),
    )


def _objective(doc: Mapping[str, Any]) -> DeclaredObjective:
    exclude = doc.get("exclude")
    return DeclaredObjective(
        objective=Objective(doc["name"], doc["kind"], doc.get("description", "")),
        predicted_at=doc["predicted_at"],
        label=_label(doc["label"]),
        exclude=None if exclude is None else _condition(exclude),
        variants={str(k): _variant(v) for k, v in doc.get("variants", {}).items()},
    )


def _variant(doc: Mapping[str, Any]) -> Variant:
    """A variant: a label as written, or ``{label: …, exclude: …}`` (either may be left out)."""
    if "label" not in doc and "exclude" not in doc:
        return Variant(label=_label(doc))
    label, exclude = doc.get("label"), doc.get("exclude")
    return Variant(
        label=None if label is None else _label(label),
        exclude=None if exclude is None else _condition(exclude),
    )


def _label(doc: Mapping[str, Any]) -> Condition | Value:
    if "value" in doc:
        return Value((doc["value"],))
    if "days_between" in doc:
        return Value(tuple(doc["days_between"]), "days")
    if "hours_between" in doc:
        return Value(tuple(doc["hours_between"]), "hours")
    return _condition(doc)


def _condition(doc: Mapping[str, Any]) -> Condition:
    for op in ("all", "any"):
        if op in doc:
            return Combine(op, tuple(_condition(c) for c in doc[op]))
    if "not" in doc:
        return Combine("not", (_condition(doc["not"]),))
    ((op, value),) = ((k, v) for k, v in doc.items() if k != "column")
    if op in ("in", "not_in"):
        value = tuple(value)
    return Compare(doc["column"], op, value)
