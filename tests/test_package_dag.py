"""The packages form a tree: imports between them run one way, and the core names no outer one.

Every import between two subpackages of ``fedcare_core`` (or of ``fedcare``), at any level of
a module (a function's lazy import and a type-checking one count), is an arrow; the arrows must
form a directed acyclic graph, and every arrow must point down :data:`CORE_LAYERS`
(:data:`APP_LAYERS`). The core names no module outside it, even in a string (a ``module:name``
to import later). An extension point is an entry point (:mod:`fedcare_core.plugins`), not an
arrow.

:data:`CORE_REMAINING` and :data:`APP_REMAINING` list the arrows that still run the wrong way
(issue 53's restructuring, under way); the test fails when one of them is mended until it is
struck from the list, so the list only shrinks.
"""

from __future__ import annotations

import ast
import graphlib
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: ``fedcare_core``'s subpackages, lowest first: each imports only those before it.
CORE_LAYERS = (
    "plugins", "moo", "privacy", "config", "objectives", "files", "data", "nn", "stage1", "stage2",
    "evaluation", "predict", "algorithms", "run", "resume", "sites",
)  # fmt: skip
#: ``fedcare``'s packages, lowest first.
APP_LAYERS = (
    "procs", "experiments", "tracking", "flower", "sites", "grid", "app", "stack", "cli",
)  # fmt: skip
#: Wrong-way arrows (importer, imported) → the modules that make them, still to mend.
CORE_REMAINING: dict[tuple[str, str], set[str]] = {}
APP_REMAINING: dict[tuple[str, str], set[str]] = {}
#: Core modules that still name an outer module in a string (their datasets' raw-table checks).
OUTER_NAMED_REMAINING: set[str] = set()
#: The packages outside the core whose modules the core may not name.
OUTER_PACKAGES = ("fedcare", "data_checks", "flows", "tasks")


def _imported_names(tree: ast.AST) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def _arrows(top: str) -> dict[tuple[str, str], set[str]]:
    """(importing subpackage, imported subpackage) → the importing modules."""
    arrows: dict[tuple[str, str], set[str]] = {}
    for path in sorted((ROOT / top).rglob("*.py")):
        rel = path.relative_to(ROOT)
        if len(rel.parts) < 3:  # the package's own loose modules (errors.py, __init__.py)
            continue
        source = rel.parts[1]
        for name in _imported_names(ast.parse(path.read_text(encoding="utf-8"))):
            parts = name.split(".")
            if parts[0] == top and len(parts) > 1 and (ROOT / top / parts[1]).is_dir():
                if parts[1] != source:
                    arrows.setdefault((source, parts[1]), set()).add(rel.as_posix())
    return arrows


def _wrong_way(top: str, layers: tuple[str, ...]) -> dict[tuple[str, str], set[str]]:
    arrows = _arrows(top)
    packages = {p.name for p in (ROOT / top).iterdir() if (p / "__init__.py").exists()}
    assert packages == set(layers), f"{top}'s packages and its layers differ: place each one"
    rank = {name: i for i, name in enumerate(layers)}
    return {arrow: files for arrow, files in arrows.items() if rank[arrow[1]] > rank[arrow[0]]}


def test_the_cores_packages_import_one_way_down_their_layers():
    assert _wrong_way("fedcare_core", CORE_LAYERS) == CORE_REMAINING


def test_the_application_packages_import_one_way_down_their_layers():
    assert _wrong_way("fedcare", APP_LAYERS) == APP_REMAINING


def test_without_the_remaining_arrows_each_graph_is_a_tree_of_layers():
    for top, remaining in (("fedcare_core", CORE_REMAINING), ("fedcare", APP_REMAINING)):
        graph: dict[str, set[str]] = {}
        for source, target in _arrows(top):
            if (source, target) not in remaining:
                graph.setdefault(source, set()).add(target)
        graphlib.TopologicalSorter(graph).prepare()  # CycleError naming a cycle


def _outer_module(dotted: str) -> bool:
    """Whether ``dotted`` (``fedcare.flower.simulation``) is a module outside the core."""
    parts = dotted.split(".")
    if parts[0] not in OUTER_PACKAGES or len(parts) < 2:
        return False
    path = ROOT.joinpath(*parts)
    return path.is_dir() or path.with_suffix(".py").exists()


def _strings(tree: ast.AST) -> Iterator[str]:
    """Every string constant of a module but its docstrings."""
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            yield node.value


def test_the_core_names_no_outer_module_even_in_a_string():
    dotted = re.compile(r"\b[a-z_]+(?:\.[a-z_0-9]+)+")
    naming: set[str] = set()
    for path in sorted((ROOT / "fedcare_core").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imports = [n for n in _imported_names(tree) if n.split(".")[0] in OUTER_PACKAGES]
        strings = [m for s in _strings(tree) for m in dotted.findall(s) if _outer_module(m)]
        assert not imports, f"{path.relative_to(ROOT)} imports {imports}"
        if strings:
            naming.add(path.relative_to(ROOT).as_posix())
    assert naming == OUTER_NAMED_REMAINING
