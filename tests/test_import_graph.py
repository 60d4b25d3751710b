"""The project's import graph has no cycle (imports inside functions and TYPE_CHECKING included).

A cycle hidden by an import inside a function still couples two modules both ways; this test
walks every ``import`` statement of the project's packages with ``ast`` and fails on any
strongly connected component of more than one module, naming its modules.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import PROJECT_PACKAGES, REPO_ROOT


def project_modules(root: Path) -> dict[str, Path]:
    """Dotted module name → file, for every module of the project's packages."""
    modules: dict[str, Path] = {}
    for package in PROJECT_PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


def _owner(name: str, modules: dict[str, Path]) -> str | None:
    """The project module a dotted name refers to (a module, or a name inside one)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imported_names(module: str, path: Path) -> set[str]:
    """Every dotted name ``module`` imports, anywhere in its file."""
    is_package = path.name == "__init__.py"
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            names.add(source)
            names.update(f"{source}.{alias.name}" for alias in node.names)
    return names


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module → the project modules it imports."""
    modules = project_modules(root)
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        targets = {_owner(n, modules) for n in imported_names(module, path)}
        graph[module] = {t for t in targets if t is not None and t != module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_project_has_no_import_cycle() -> None:
    graph = import_graph(REPO_ROOT)
    assert len(graph) > 100  # the walk found the project
    assert cycles(graph) == []


def test_a_cycle_through_an_import_inside_a_function_is_found(tmp_path: Path) -> None:
    pkg = tmp_path / "fedcare_core"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from fedcare_core.b import g\n\ndef f():\n    return g()\n")
    (pkg / "b.py").write_text("def g():\n    from fedcare_core import a\n    return a\n")
    (pkg / "c.py").write_text("from . import a\n")
    assert cycles(import_graph(tmp_path)) == [["fedcare_core.a", "fedcare_core.b"]]
