"""Valid dataset definitions, each omitting one optional key, and an export matching each.

:data:`MAXIMAL` is the worked example (``examples/hospital/definition.yaml``) with every optional
key of the published JSON Schema written somewhere; :func:`optional_paths` lists the optional
keys a document holds (read off the schema, so a key added to it later is covered without
changing this file) and :func:`without` drops one. :func:`write_export` writes a small synthetic
export (``examples/hospital/make_extract.py``'s rows) in the files' names, delimiter and gaps a
definition declares. No row is a patient's.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from fedcare_core.data.declared import definition_schema
from tests.fedcare_core.data.declared.helpers import EXAMPLE_DEFINITION, example_extract

#: A key's place in a document: mapping keys and list indices.
KeyPath = tuple[str | int, ...]

#: What the maximal definition adds to the example: every optional key of the schema.
_ADDED_COLUMNS: dict[str, dict[str, Any]] = {
    "AGE_BAND": {
        "type": "float",
        "parse": "interval_midpoint",
        "vocabulary": ["[10-40)", "[40-70)", "[70-120)"],
        "range": [10, 120],
        "description": "age as an interval",
        "known_at": "admission",
    },
    "WARD_CODE": {
        "type": "categorical",
        "vocabulary": [1, 2, 3],
        "integer_codes": True,
        "known_at": "stay",
    },
}


def _maximal() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(EXAMPLE_DEFINITION.read_text(encoding="utf-8"))
    doc["source"].update(
        format="csv",
        delimiter=";",
        rename={"PATIENT_NUMBER": "MRN"},
        url="https://example.org/riverside.csv",
        missing_hint="ask the hospital's data warehouse team",
        sha256="0" * 64,
    )
    doc["identifiers"].update(pattern="[A-Z0-9]+", form="letters and digits", numbering="ascending")
    columns = doc["columns"]
    columns.update(copy.deepcopy(_ADDED_COLUMNS))
    columns["SEX"]["recode"] = {"female": "F", "male": "M"}
    columns["BMI"]["present_at_least"] = 0.1
    columns["PRIN_DX_ICD10"].update(form="an ICD-10-CM code", unit="code")
    columns["PRIN_DX_ICD10"]["groups"]["other"] = "other_chapters"
    objectives = {o["name"]: o for o in doc["objectives"]}
    objectives["mortality"]["metric"] = "auroc"
    objectives["mortality"]["exclude"] = {"column": "DISCH_DISPO", "eq": "TRANSFER"}
    objectives["los"]["metric"] = "mae_days"
    objectives["readmission"]["variants"] = {
        "any": {"label": {"column": "READMIT_30D", "ne": "N"}, "exclude": {"missing": True}},
        "deaths": {"exclude": {"column": "DISCH_DISPO", "in": ["EXPIRED", "HOSPICE"]}},
    }
    objectives["readmission"]["variants"]["any"]["exclude"] = {
        "column": "DISCH_DISPO",
        "eq": "EXPIRED",
    }
    partition = doc["partition"]
    partition["private"]["mortality"].append("AGE_BAND")
    partition["private"]["readmission"].append("WARD_CODE")
    partition["ignores_prediction_times"] = "kept as the hospital's analysts chose it"
    partition["moves_at_prediction_time"] = {"readmission": ["ICU_STAY"]}
    partition["private"]["readmission"].remove("ICU_STAY")
    partition["private"]["los"].append("ICU_STAY")  # known during the stay: a later pool's
    doc["refuse"] = [
        {
            "when": {"column": "AGE_YRS", "gt": 109},
            "column": "AGE_YRS",
            "message": "an age above 109 is a data-entry fault",
        }
    ]
    doc["sensitive"] = {"age": {"column": "AGE_YRS", "bands": [50, 70]}, "sex": {"column": "SEX"}}
    return doc


#: The example with every optional key of the schema written (a valid definition).
MAXIMAL: dict[str, Any] = _maximal()


def _schema_keys(node: Any) -> set[str]:
    """Every property name the schema declares anywhere."""
    if isinstance(node, list):
        return {k for item in node for k in _schema_keys(item)}
    if not isinstance(node, dict):
        return set()
    keys = set(node.get("properties", {}))
    return keys | {k for v in node.values() for k in _schema_keys(v)}


#: The schema's own key names (everything else in a path is a name the document chose).
_KEYS = _schema_keys(definition_schema())


def _resolve(schema: Mapping[str, Any], node: Mapping[str, Any]) -> Mapping[str, Any]:
    while "$ref" in node:
        name = str(node["$ref"]).rsplit("/", 1)[-1]
        node = schema["$defs"][name]
    return node


def _branch(
    schema: Mapping[str, Any], node: Mapping[str, Any], value: Any
) -> tuple[Mapping[str, Any], set[str]] | None:
    """The form whose keys fit the mapping ``value`` (a ``oneOf``'s), and the keys it requires.

    A node with its own ``properties`` is the form; a ``oneOf`` of ``required`` lists beside
    them adds the matching list's keys (a source's ``files`` or ``extractor``).
    """
    node = _resolve(schema, node)
    keys = set(value)
    if "properties" in node or "additionalProperties" in node:
        required = set(node.get("required", ()))
        for option in node.get("oneOf", ()):
            if set(option.get("required", ())) <= keys:
                required |= set(option["required"])
        return node, required
    for option in node.get("oneOf", ()):
        found = _branch(schema, option, value)
        if found is not None and found[1] <= keys <= set(found[0].get("properties", ())):
            return found
    return None


def optional_paths(document: Any) -> list[KeyPath]:
    """Every key of ``document`` its JSON Schema does not require, as a path."""
    return [path for path, _, optional in _present_keys(document) if optional]


def uncovered_keys(document: Any) -> list[str]:
    """The optional keys of each form ``document`` uses that it writes nowhere (``form.key``).

    A form whose keys are alternatives (a condition's operators, a ``oneOf`` of ``required``
    lists such as a source's ``files`` or ``extractor``) is not asked for all of them.
    """
    forms: dict[int, tuple[str, Mapping[str, Any]]] = {}
    written: set[tuple[int, str]] = set()
    for path, form, _ in _present_keys(document):
        forms.setdefault(id(form), (general(path[:-1]) or "(top)", form))
        written.add((id(form), str(path[-1])))
    out = []
    for ident, (name, form) in forms.items():
        if form.get("minProperties", 0) > 1:
            continue
        alternatives = {k for option in form.get("oneOf", ()) for k in option.get("required", ())}
        optional = set(form.get("properties", {})) - set(form.get("required", ())) - alternatives
        out += [f"{name}.{key}" for key in sorted(optional) if (ident, key) not in written]
    return out


def _present_keys(document: Any) -> Iterator[tuple[KeyPath, Mapping[str, Any], bool]]:
    """Each key of ``document`` a schema form declares: its path, the form, whether optional."""
    root = definition_schema()
    yield from _walk(root, root, document, ())


def _walk(
    root: Mapping[str, Any], node: Mapping[str, Any], value: Any, here: KeyPath
) -> Iterator[tuple[KeyPath, Mapping[str, Any], bool]]:
    if isinstance(value, list):
        items = _resolve(root, node).get("items")
        for i, item in enumerate(value):
            if isinstance(items, Mapping):
                yield from _walk(root, items, item, (*here, i))
        return
    if not isinstance(value, dict):
        return
    found = _branch(root, node, value)
    if found is None:
        return
    form, required = found
    properties = form.get("properties", {})
    extra = form.get("additionalProperties")
    # a key whose removal leaves fewer keys than the form needs (a condition's operator) is
    # not optional there
    removable = len(value) > form.get("minProperties", 0)
    for key, item in value.items():
        if key in properties:
            yield (*here, key), form, key not in required and removable
            yield from _walk(root, properties[key], item, (*here, key))
        elif isinstance(extra, Mapping):
            yield from _walk(root, extra, item, (*here, key))


def general(path: KeyPath) -> str:
    """The path with names a document chooses (columns, variants) and indices as ``*``."""
    return dotted(tuple(p if isinstance(p, str) and p in _KEYS else "*" for p in path))


def without(document: Mapping[str, Any], path: KeyPath) -> dict[str, Any]:
    """A deep copy of ``document`` without the key at ``path``."""
    out: dict[str, Any] = copy.deepcopy(dict(document))
    parent: Any = out
    for part in path[:-1]:
        parent = parent[part]
    del parent[path[-1]]
    return out


def dotted(path: KeyPath) -> str:
    """``objectives[0].description`` for a path."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def write_definition(document: Mapping[str, Any], path: Path) -> Path:
    """``document`` as a YAML file."""
    path.write_text(yaml.safe_dump(dict(document), sort_keys=False), encoding="utf-8")
    return path


def write_export(document: Mapping[str, Any], path: Path, rows: int = 240) -> Path:
    """A synthetic export of ``rows`` encounters as ``document`` declares its file.

    The example's rows, with the added columns, their gaps filled where a column declares none,
    named as ``source.rename`` names them and written with the declared delimiter.
    """
    frame = example_extract(rows, seed=5)
    rng = np.random.default_rng(5)
    frame["AGE_BAND"] = pd.cut(
        frame["AGE_YRS"], [10, 40, 70, 120], right=False, labels=["[10-40)", "[40-70)", "[70-120)"]
    ).astype(str)
    frame["WARD_CODE"] = rng.integers(1, 4, len(frame))
    for name, spec in document["columns"].items():
        if not spec.get("gaps", False) and frame[name].isna().any():
            frame[name] = frame[name].fillna(frame[name].dropna().iloc[0])
    source = document["source"]
    frame = frame.rename(columns={v: k for k, v in source.get("rename", {}).items()})
    frame.to_csv(path, sep=source.get("delimiter", ","), index=False)
    return path
