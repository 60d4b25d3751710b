"""The one way FedCARE reads YAML: safe types, a key written twice refused, and bounded.

YAML lets a small file describe a huge document: an alias repeats a whole subtree, so a 1 KB
file of nested aliases (the "billion laughs") expands to 10⁹ values, and every reader that walks
it (a JSON Schema check, a copy) hangs; a deeply nested one exhausts Python's stack. Every YAML
the project reads (dataset definitions, a site's private features and column map, a site's
policy, a model's ``MLmodel``, a definition carried by a schema or a package) goes through
:func:`load_yaml_documents` (or :func:`load_yaml`), which refuses, while composing and before
anything walks the document:

* more than :data:`MAX_YAML_BYTES` bytes (:func:`read_yaml_file` checks a file's size before
  reading it);
* nesting deeper than :data:`MAX_YAML_DEPTH` levels;
* more than :data:`MAX_YAML_NODES` values once every alias is expanded (counted per node as it
  is composed: an alias adds the size of the subtree it repeats), and an alias inside the very
  node it names (a loop no reader can walk).

Each refusal is a :class:`YamlLimitError` naming the limit and the line. Parsing uses libyaml's
C parser where PyYAML has it (the same composer and checks run on its events); any error is
reported by PyYAML's own Python parser, so messages do not depend on the installation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, SequenceNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import BaseResolver, Resolver
from yaml.scanner import Scanner

__all__ = [
    "BOUNDS",
    "MAX_YAML_BYTES",
    "MAX_YAML_DEPTH",
    "MAX_YAML_NODES",
    "RepeatedKeyError",
    "YamlLimitError",
    "compose_yaml_documents",
    "load_yaml",
    "load_yaml_documents",
    "read_yaml_file",
    "yaml_size_problem",
]

#: The largest YAML read, in bytes (a dataset definition is a few tens of KB).
MAX_YAML_BYTES = 2**20
#: The deepest nesting read (a definition's conditions nest a few levels).
MAX_YAML_DEPTH = 64
#: The most values (scalars, lists, mappings) a document may hold once its aliases are
#: expanded (the built-in Diabetes 130 definition holds about 1,100; composing 50,000 takes about
#: a second).
MAX_YAML_NODES = 50_000
#: The limits in words, for messages.
BOUNDS = (
    f"YAML is read up to {MAX_YAML_BYTES // 2**20} MiB, {MAX_YAML_DEPTH} levels of nesting and "
    f"{MAX_YAML_NODES:,} values with aliases expanded"
)


class YamlLimitError(yaml.YAMLError):
    """A YAML document over one of the limits: ``problem`` says which, ``line`` where (1-based)."""

    def __init__(self, problem: str, line: int | None = None) -> None:
        self.problem = problem
        self.line = line
        super().__init__(problem if line is None else f"{problem} (line {line})")


class RepeatedKeyError(ConstructorError):
    """A key written twice in one mapping (``problem_mark``: where it is written again)."""


class _BoundedComposer(Composer):
    """PyYAML's composer, counting depth and expanded size as each node is composed."""

    def _start_bounds(self) -> None:
        self._depth = 0
        self._sizes: dict[int, int] = {}  # id(node) → values in it, aliases expanded
        self._total = 0

    def compose_document(self) -> Node | None:
        node: Node | None = super().compose_document()
        if node is not None:
            self._total += self._sizes[id(node)]
        self._sizes.clear()  # the next document's anchors are its own
        return node

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        if self.check_event(AliasEvent):
            mark = self.peek_event().start_mark
            node: Node | None = super().compose_node(parent, index)
            if node is not None and id(node) not in self._sizes:
                raise YamlLimitError(
                    "an alias repeats the node that holds it (a loop no reader can walk)",
                    mark.line + 1,
                )
            return node
        line = self.peek_event().start_mark.line + 1
        self._depth += 1
        if self._depth > MAX_YAML_DEPTH:
            raise YamlLimitError(f"nested deeper than {MAX_YAML_DEPTH} levels", line)
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if node is not None:
            self._count(node, line)
        return node

    def _count(self, node: Node, line: int) -> None:
        size = 1
        if isinstance(node, SequenceNode):
            size += sum(self._sizes[id(item)] for item in node.value)
        elif isinstance(node, MappingNode):
            size += sum(self._sizes[id(k)] + self._sizes[id(v)] for k, v in node.value)
        if self._total + size > MAX_YAML_NODES:
            raise YamlLimitError(
                f"more than {MAX_YAML_NODES:,} values once its aliases are expanded", line
            )
        self._sizes[id(node)] = size


def _construct_unique_mapping(loader: SafeConstructor, node: MappingNode) -> dict[Any, Any]:
    """A mapping, refusing a key written twice (a ``<<`` merge's keys may be overridden)."""
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue  # ``<<: *anchor``: merged by construct_mapping (written keys override it)
        key = loader.construct_object(key_node)
        try:
            repeated = key in seen
        except TypeError:  # an unhashable key: construct_mapping refuses it, with its line
            continue
        if repeated:
            raise RepeatedKeyError(None, None, f"key {key!r} is written twice", key_node.start_mark)
        seen.add(key)
    return dict(loader.construct_mapping(node))


class BoundedSafeLoader(Reader, Scanner, Parser, _BoundedComposer, SafeConstructor, Resolver):
    """PyYAML's safe loader (pure Python), bounded and refusing a key written twice."""

    def __init__(self, stream: str) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self._start_bounds()


BoundedSafeLoader.add_constructor(BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping)


def _fast_loader() -> type | None:
    """The same loader on libyaml's C parser (None where PyYAML was built without it)."""
    try:
        from yaml._yaml import CParser
    except ImportError:  # pragma: no cover - PyYAML without libyaml
        return None

    class FastBoundedSafeLoader(_BoundedComposer, CParser, SafeConstructor, Resolver):
        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
            self._start_bounds()

    FastBoundedSafeLoader.add_constructor(
        BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping
    )
    return FastBoundedSafeLoader


_FAST_LOADER = _fast_loader()


def yaml_size_problem(size: int) -> str | None:
    """Why ``size`` bytes of YAML are refused (None: they are not)."""
    if size <= MAX_YAML_BYTES:
        return None
    return f"{size:,} bytes; at most {MAX_YAML_BYTES:,} are read"


def _check_size(text: str) -> None:
    size = len(text) if text.isascii() else len(text.encode("utf-8"))
    problem = yaml_size_problem(size)
    if problem is not None:
        raise YamlLimitError(problem)


def _run(text: str, method: str) -> list[Any]:
    """Every document of ``text`` by the loader's ``method`` (``get_data``, ``get_node``)."""
    _check_size(text)
    loaders = [BoundedSafeLoader] if _FAST_LOADER is None else [_FAST_LOADER, BoundedSafeLoader]
    for loader_class in loaders:
        loader = loader_class(text)
        try:
            check = loader.check_data if method == "get_data" else loader.check_node
            out = []
            while check():
                out.append(getattr(loader, method)())
            return out
        except YamlLimitError:
            raise
        except yaml.YAMLError as exc:
            if loader_class is BoundedSafeLoader:
                raise  # PyYAML's own message (the C parser's is worded otherwise)
            if "maximum nesting depth" in str(exc):  # libyaml's own bound (1,000), met first
                mark = getattr(exc, "problem_mark", None)  # while it scans ahead of us
                line = None if mark is None else mark.line + 1
                raise YamlLimitError(f"nested deeper than {MAX_YAML_DEPTH} levels", line) from None
        finally:
            loader.dispose()
    raise AssertionError("unreachable")  # pragma: no cover


def load_yaml_documents(text: str) -> list[Any]:
    """Every document of ``text``, bounded (safe types only; a key written twice refused).

    Raises
    ------
    YamlLimitError
        Over :data:`MAX_YAML_BYTES`, :data:`MAX_YAML_DEPTH` or :data:`MAX_YAML_NODES`.
    RepeatedKeyError
        A key written twice in one mapping.
    yaml.YAMLError
        Not YAML (PyYAML's message).
    """
    return _run(text, "get_data")


def compose_yaml_documents(text: str) -> list[Node]:
    """Every document of ``text`` as nodes (nothing constructed), bounded.

    Raises
    ------
    YamlLimitError, yaml.YAMLError
        As :func:`load_yaml_documents`.
    """
    return _run(text, "get_node")


def load_yaml(text: str) -> Any:
    """The one document of ``text`` (None for an empty text), bounded.

    Raises
    ------
    YamlLimitError, RepeatedKeyError, yaml.YAMLError
        As :func:`load_yaml_documents`; a text of several documents is a ``yaml.YAMLError``.
    """
    documents = load_yaml_documents(text)
    if len(documents) > 1:
        raise yaml.YAMLError(f"expected one YAML document, found {len(documents)}")
    return documents[0] if documents else None


def read_yaml_file(path: str | Path) -> Any:
    """The one document of the file ``path``: its size checked before it is read, then bounded.

    Raises
    ------
    OSError, UnicodeDecodeError
        The file cannot be read, or is not UTF-8.
    YamlLimitError, RepeatedKeyError, yaml.YAMLError
        As :func:`load_yaml`.
    """
    p = Path(path)
    problem = yaml_size_problem(p.stat().st_size)
    if problem is not None:
        raise YamlLimitError(problem)
    return load_yaml(p.read_bytes().decode("utf-8-sig"))
