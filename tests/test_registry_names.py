"""No dataset, backend or algorithm name is compared outside its registry.

What an algorithm, a dataset or a backend can do is declared once, in its registry entry or on
its class (:class:`~fedcare_core.algorithms.base.Algorithm`'s capabilities,
:class:`~fedcare_core.data.registry.DatasetSpec`,
:class:`~fedcare_core.config.backends.BackendSpec`);
code elsewhere asks for the capability, never for the name (``algorithm == "fedprox"``,
``dataset in ("diabetes130",)``), so a new entry is one module and one registry line. This test
walks the syntax tree of every project module and fails on a comparison (``==``, ``!=``,
``in``, ``not in``) with a registered name, written out or held in a module-level tuple of them.
"""

from __future__ import annotations

import ast
from pathlib import Path

from fedcare_core.algorithms import algorithm_names
from fedcare_core.config.backends import backend_names
from fedcare_core.data.registry import dataset_names

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("fedcare", "fedcare_core", "flows", "tasks", "data_checks")
#: The registries, and the packages that are a registered entry's own code.
REGISTRIES = (
    "fedcare_core/algorithms/",
    "fedcare_core/config/backends.py",
    "fedcare_core/data/registry.py",
    *(f"fedcare_core/data/{name}/" for name in dataset_names()),
    "data_checks/datasets.py",
)
NAMES = frozenset(algorithm_names()) | frozenset(dataset_names()) | frozenset(backend_names())


def _strings(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [s for e in node.elts for s in _strings(e)]
    return []


def _name_tables(tree: ast.Module) -> set[str]:
    """Module-level constants that are a tuple (list, set) of registered names only."""
    tables = set()
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            values = _strings(node.value)
            is_table = isinstance(node.value, ast.Tuple | ast.List | ast.Set)
            if is_table and values and all(v in NAMES for v in values):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                tables |= {t.id for t in targets if isinstance(t, ast.Name)}
    return tables


def name_comparisons(path: Path) -> list[str]:
    """``file:line: names`` of each comparison with a registered name in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    tables = _name_tables(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        names = [s for side in sides for s in _strings(side) if s in NAMES]
        names += [side.id for side in sides if isinstance(side, ast.Name) and side.id in tables]
        if names:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {sorted(set(names))}")
    return found


def _modules() -> list[Path]:
    paths = [p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))]
    return [p for p in paths if not str(p.relative_to(ROOT)).startswith(REGISTRIES)]


def test_no_registered_name_is_compared_outside_its_registry() -> None:
    modules = _modules()
    assert len(modules) > 150  # the walk found the project
    assert [hit for path in modules for hit in name_comparisons(path)] == []


def test_the_walk_finds_a_comparison_written_out_or_through_a_table() -> None:
    probe = ROOT / "fedcare" / "_probe_names.py"  # under ROOT, so that it is named relative
    probe.write_text(
        'PAIR = ("fedavg", "fedprox")\n'
        "def f(a, d, b):\n"
        '    return a == "fedprox" or d in ("mimic3",) or b != "flower-sim" or a in PAIR\n'
        '    x = "fedcare"  # a name used, not compared\n'
    )
    try:
        hits = name_comparisons(probe)
    finally:
        probe.unlink()
    assert len(hits) == 4 and any("['PAIR']" in hit for hit in hits)
