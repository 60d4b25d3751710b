"""Reading a YAML file a user writes against a published JSON Schema, one message per fault.

:func:`read_yaml_document` reads a definition file (a dataset's, a site's private features, a
column map): missing, unreadable, oversized, not UTF-8, not YAML, a repeated key or a document
its JSON Schema refuses is one :class:`~fedcare_core.errors.DefinitionError` naming the file and
the key (``columns.age.range``, ``objectives[1].label``), before anything is done with it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from fedcare_core.errors import DefinitionError
from fedcare_core.files.safe_yaml import (
    BOUNDS,
    RepeatedKeyError,
    YamlLimitError,
    compose_yaml_documents,
    load_yaml_documents,
    yaml_size_problem,
)

#: How many characters of a refused value a message shows.
_SHOWN = 60


@cache
def load_schema(package: str, name: str) -> dict[str, Any]:
    """The JSON Schema ``name`` shipped in ``package`` (read once)."""
    text = resources.files(package).joinpath(name).read_text(encoding="utf-8")
    return dict(json.loads(text))


def read_yaml_text(path: str | Path, what: str) -> str:
    """The text of ``path``, a ``what`` (for messages): present, readable, UTF-8, small.

    Raises
    ------
    DefinitionError
        Naming the file.
    """
    shown = str(path)
    p = Path(path)
    try:
        if p.is_dir():
            raise DefinitionError(f"{what} must be a file, this is a folder", file=shown)
        problem = yaml_size_problem(p.stat().st_size)
        if problem is not None:
            raise DefinitionError(f"a {what} is read whole: this one is {problem}", file=shown)
        return p.read_bytes().decode("utf-8-sig")
    except FileNotFoundError:
        raise DefinitionError(f"no such {what}", file=shown) from None
    except PermissionError:
        raise DefinitionError(f"cannot read the {what} (permission denied)", file=shown) from None
    except UnicodeDecodeError:
        raise DefinitionError(f"the {what} is not UTF-8 text", file=shown) from None
    except OSError as exc:
        raise DefinitionError(f"cannot read the {what} ({exc.strerror})", file=shown) from None


def parse_yaml(text: str, file: str, what: str) -> Any:
    """The YAML document in ``text`` (safe types only; a repeated key refused; bounded).

    Raises
    ------
    DefinitionError
        Naming the file and the line; a document over the bounds of
        :mod:`fedcare_core.files.safe_yaml` (size, nesting, values once aliases are expanded)
        naming the limit, before anything walks it.
    """
    try:
        documents = load_yaml_documents(text)
    except YamlLimitError as exc:
        raise DefinitionError(_limit_message(exc, what), file=file) from None
    except RepeatedKeyError as exc:
        assert exc.problem_mark is not None
        raise DefinitionError(
            f"not valid YAML at line {exc.problem_mark.line + 1}: {exc.problem}",
            file=file,
            key=_key_written_at(text, exc.problem_mark.index),
        ) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f" at line {mark.line + 1}" if mark is not None else ""
        problem = exc.problem or exc.context or "malformed"
        raise DefinitionError(f"not valid YAML{line}: {problem}", file=file) from None
    except yaml.YAMLError as exc:
        raise DefinitionError(f"not valid YAML ({exc})", file=file) from None
    if len(documents) != 1:
        raise DefinitionError(
            f"a {what} holds one YAML document, this holds {len(documents)}", file=file
        )
    return documents[0]


def _limit_message(exc: YamlLimitError, what: str) -> str:
    """A bound of :mod:`~fedcare_core.files.safe_yaml` exceeded, in words (the limits named)."""
    where = "" if exc.line is None else f" at line {exc.line}"
    return f"this {what} is refused{where}: {exc.problem} ({BOUNDS})"


def _key_written_at(text: str, index: int) -> str | None:
    """The path (``columns.age``) of the mapping key written at character ``index`` of ``text``.

    The text is composed again (nodes only: no key is compared) and walked to that key.
    """
    seen: set[int] = set()

    def walk(node: yaml.Node, parts: list[Any]) -> str | None:
        if id(node) in seen:  # an alias: walked already
            return None
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                here = [*parts, key_node.value]
                if key_node.start_mark.index == index:
                    return key_path(here)
                found = walk(value_node, here)
                if found is not None:
                    return found
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                found = walk(item, [*parts, i])
                if found is not None:
                    return found
        return None

    try:
        for document in compose_yaml_documents(text):
            found = None if document is None else walk(document, [])
            if found is not None:
                return found
    except yaml.YAMLError:
        return None
    return None


def read_yaml_document(
    path: str | Path,
    what: str,
    schema: dict[str, Any],
    refs: Sequence[dict[str, Any]] = (),
) -> tuple[Any, str]:
    """The document of ``path`` checked against ``schema``, and the file's text.

    Parameters
    ----------
    path
        The file.
    what
        What it is, for messages (``dataset definition``).
    schema
        Its JSON Schema (draft 2020-12).
    refs
        Schemas its ``$ref`` names by ``$id``.

    Returns
    -------
    document, text
        The parsed document (valid under ``schema``) and the text read.

    Raises
    ------
    DefinitionError
        Naming the file and, for a document the schema refuses, the key at fault.
    """
    text = read_yaml_text(path, what)
    document = parse_yaml(text, str(path), what)
    check_against_schema(document, schema, str(path), what, refs)
    return document, text


def check_against_schema(
    document: Any,
    schema: dict[str, Any],
    file: str,
    what: str,
    refs: Sequence[dict[str, Any]] = (),
) -> None:
    """Refuse ``document`` if ``schema`` (with ``refs``) does; the most relevant fault, in words.

    Raises
    ------
    DefinitionError
        Naming the file and the key.
    """
    import jsonschema
    from referencing import Registry, Resource

    registry: Registry[Any] = Registry().with_resources(
        (str(ref["$id"]), Resource.from_contents(ref)) for ref in refs
    )
    validator = jsonschema.Draft202012Validator(schema, registry=registry)
    error = jsonschema.exceptions.best_match(validator.iter_errors(document))
    if error is None:
        return
    if not error.absolute_path and error.validator == "type":
        raise DefinitionError(
            f"a {what} is a YAML mapping of keys, this is {_kind(document)}", file=file
        )
    raise DefinitionError(_explain(error), file=file, key=key_path(_fault_path(error)))


def _fault_path(error: Any) -> list[Any]:
    """Where a schema's fault is: a missing or unknown key's own path, else its value's."""
    parts = list(error.absolute_path)
    instance = error.instance
    if not isinstance(instance, dict):
        return parts
    if error.validator == "required":
        parts += [k for k in error.validator_value if k not in instance][:1]
    elif error.validator == "additionalProperties":
        allowed = set(error.schema.get("properties", {}))
        parts += [str(k) for k in instance if k not in allowed][:1]
    return parts


def key_path(parts: Any) -> str | None:
    """``columns.age.range`` / ``objectives[1].label`` from a path of keys and indices."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or None


def _explain(error: Any) -> str:
    """One jsonschema error in words (the value shown short, never a whole subtree)."""
    kind = error.validator
    value = error.validator_value
    instance = error.instance
    if kind == "required":
        missing = [k for k in value if not isinstance(instance, dict) or k not in instance]
        return f"missing key(s): {', '.join(missing)}"
    if kind == "additionalProperties":
        allowed = set(error.schema.get("properties", {}))
        extra = [k for k in instance if k not in allowed]
        known = ", ".join(sorted(allowed))
        return f"unknown key(s): {', '.join(map(str, extra))}" + (
            f" (expected: {known})" if known else ""
        )
    if kind == "enum":
        return f"unknown value {_short(instance)}; expected one of {', '.join(map(str, value))}"
    if kind == "const":
        return f"unsupported value {_short(instance)}; this FedCARE reads {value!r}"
    if kind == "type":
        expected = " or ".join(value) if isinstance(value, list) else value
        hint = (
            " (YAML reads an unquoted yes/no/true/false/on/off as a boolean: quote it)"
            if isinstance(instance, bool)
            else ""
        )
        return f"expected {expected}, got {_kind(instance)}{hint}"
    if kind == "pattern":
        return f"{_short(instance)} does not have the expected form ({value})"
    if kind in ("minItems", "maxItems", "minProperties", "maxProperties"):
        return _count_message(kind, value, instance)
    if kind in ("minLength", "maxLength"):
        bound = "at least" if kind == "minLength" else "at most"
        return f"{_short(instance)} must have {bound} {value} character(s)"
    if kind == "uniqueItems":
        return "an item is written twice"
    if kind == "oneOf":
        return _one_of_message(error)
    return " ".join(str(error.message).split())[:200]


def _count_message(kind: str, value: int, instance: Any) -> str:
    bound = "at least" if kind.startswith("min") else "at most"
    unit = "item(s)" if kind.endswith("Items") else "key(s)"
    return f"must have {bound} {value} {unit}, has {len(instance)}"


def _one_of_message(error: Any) -> str:
    """A value matching none of a ``oneOf``'s forms: the forms, as the schema describes them."""
    forms: list[str] = []
    for option in error.schema.get("oneOf", []):
        if "$ref" in option:
            forms.append(str(option["$ref"]).rsplit("/", 1)[-1].replace("_", " "))
        else:
            keys = option.get("required", [])
            others = [k for k in option.get("properties", {}) if k not in keys]
            text = "{" + ", ".join(keys) + ("" if not others else ", one of " + "/".join(others))
            forms.append(text + "}")
    description = error.schema.get("description")
    hint = f" ({description})" if description else ""
    return f"{_short(error.instance)} is none of the accepted forms: {'; '.join(forms)}{hint}"


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return f"a boolean ({value!r})"
    if value is None:
        return "nothing (null)"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"a string ({_short(value)})"
    return f"{type(value).__name__} {_short(value)}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"
