"""The import rule: only ``fedcare/flower/flwr_internals.py`` uses Flower's non-public internals.

Every ``.py`` file of the project's packages is parsed with :mod:`ast` (imports at any depth,
inside functions too) and a use of flwr is a violation when

* it imports, or reaches by attribute, a flwr module that is not in :data:`PUBLIC_MODULES`
  (Flower's documented API reference; e.g. ``flwr.supernode...``, ``flwr.supercore...``,
  ``flwr.common.constant``),
* a name component starts with ``_`` (dunders aside), on a flwr module or on a name imported
  from one (``Message._x``, ``from flwr.app import _x``),
* a method of a class derived from a flwr class uses a private attribute it does not define
  itself (``self._check_and_log_replies`` in a FedAvg subclass), or
* it imports a non-public flwr module by name (``importlib.import_module("flwr.supernode")``).

Names are resolved per module, whatever the scope of the import (a function-level import counts
for the whole file): a project name shadowing an imported flwr name would be misread, which
no module here does. The contracts of what the seam uses:
``tests/fedcare/flower/test_flwr_internals.py``.
"""

from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import PROJECT_PACKAGES, REPO_ROOT

PACKAGES = PROJECT_PACKAGES
SEAM = REPO_ROOT / "fedcare" / "flower" / "flwr_internals.py"
#: flwr's public modules: those of Flower's Python API reference (flower.ai/docs/framework/
#: ref-api/flwr.html for 1.42: agentapp, app, client, clientapp, common, server, serverapp,
#: simulation) and the subpackages those pages document (``mod``, ``strategy``, ``workflow``).
PUBLIC_MODULES = frozenset(
    {
        "flwr",
        "flwr.agentapp",
        "flwr.app",
        "flwr.client",
        "flwr.client.mod",
        "flwr.clientapp",
        "flwr.clientapp.mod",
        "flwr.common",
        "flwr.server",
        "flwr.server.strategy",
        "flwr.server.workflow",
        "flwr.serverapp",
        "flwr.serverapp.strategy",
        "flwr.simulation",
    }
)
_IMPORT_BY_NAME = {"import_module", "importlib.import_module", "__import__"}
_ATTR_BY_NAME = {"getattr", "setattr", "hasattr", "delattr"}


def _flwr_root() -> Path:
    spec = importlib.util.find_spec("flwr")
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations)))


FLWR_ROOT = _flwr_root()


def is_flwr_module(path: str) -> bool:
    """Whether the dotted ``path`` names a module or package of the installed flwr."""
    if path != "flwr" and not path.startswith("flwr."):
        return False
    target = FLWR_ROOT.joinpath(*path.split(".")[1:])
    return target.with_suffix(".py").is_file() or (target / "__init__.py").is_file()


def exported(module: str) -> frozenset[str]:
    """The ``__all__`` of a flwr package, read from its source (nothing is imported)."""
    init = FLWR_ROOT.joinpath(*module.split(".")[1:], "__init__.py")
    if not init.is_file():
        return frozenset()
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return frozenset(ast.literal_eval(node.value))
    return frozenset()


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


@dataclass(frozen=True)
class Violation:
    """One use of a non-public flwr name."""

    file: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.what}"


class FlwrUseChecker:
    """Finds the non-public flwr names one module uses (see the module docstring)."""

    def __init__(self, source: str, file: str = "<string>") -> None:
        self.tree = ast.parse(source)
        self.file = file
        self.bound: dict[str, str] = {}  # local name → dotted flwr path it was imported as
        self.violations: list[Violation] = []

    def check(self) -> list[Violation]:
        """All violations, in source order."""
        for node in ast.walk(self.tree):  # pass 1: every import, at any depth
            if isinstance(node, ast.Import | ast.ImportFrom):
                self._imports(node)
        for node in ast.walk(self.tree):  # pass 2: uses of what was imported
            if isinstance(node, ast.Attribute):
                self._attribute(node)
            elif isinstance(node, ast.Call):
                self._call(node)
            elif isinstance(node, ast.ClassDef):
                self._subclass(node)
        return sorted(set(self.violations), key=lambda v: (v.line, v.what))

    def _flag(self, node: ast.AST, what: str) -> None:
        self.violations.append(Violation(self.file, getattr(node, "lineno", 0), what))

    def _path(self, node: ast.AST, path: str) -> None:
        """Flag a dotted flwr path that is private or goes through a non-public module.

        A name a public module exports (``flwr.simulation.run_simulation``, the function) is
        the public object even where a submodule of that name exists.
        """
        parts = path.split(".")
        in_module = True
        for i, part in enumerate(parts):
            prefix = ".".join(parts[: i + 1])
            if _private(part):
                self._flag(node, f"private flwr name {prefix}")
                return
            if in_module and i and part in exported(".".join(parts[:i])):
                in_module = False  # an exported object: only its attribute names matter now
            if in_module and is_flwr_module(prefix) and prefix not in PUBLIC_MODULES:
                self._flag(node, f"non-public flwr module {prefix}")
                return

    def _imports(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] != "flwr":
                    continue
                self._path(node, alias.name)
                if alias.asname:
                    self.bound[alias.asname] = alias.name
                else:
                    self.bound["flwr"] = "flwr"
            return
        if node.level or not node.module or node.module.split(".")[0] != "flwr":
            return
        self._path(node, node.module)
        for alias in node.names:
            full = f"{node.module}.{alias.name}"
            self._path(node, full)
            self.bound[alias.asname or alias.name] = full

    def _resolve(self, node: ast.AST) -> str | None:
        """The dotted flwr path of a ``name.attr.attr`` chain rooted at an imported name."""
        if isinstance(node, ast.Name):
            return self.bound.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self._resolve(node.value)
            return None if base is None else f"{base}.{node.attr}"
        return None

    def _attribute(self, node: ast.Attribute) -> None:
        path = self._resolve(node)
        if path is None:
            return
        self._path(node, path)

    def _call(self, node: ast.Call) -> None:
        func = ast.unparse(node.func)
        first = node.args[0] if node.args else None
        if func in _IMPORT_BY_NAME and isinstance(first, ast.Constant):
            if isinstance(first.value, str) and first.value.split(".")[0] == "flwr":
                self._path(node, first.value)
        if func in _ATTR_BY_NAME and len(node.args) > 1 and first is not None:
            name = node.args[1]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                base = self._resolve(first)
                if base is not None and _private(name.value):
                    self._flag(node, f"private flwr name {base}.{name.value}")

    def _flwr_derived(self, cls: ast.ClassDef, seen: frozenset[str] = frozenset()) -> bool:
        classes = self._classes()
        for base in cls.bases:
            if self._resolve(base) is not None:
                return True
            if isinstance(base, ast.Name) and base.id in classes and base.id not in seen:
                if self._flwr_derived(classes[base.id], seen | {cls.name}):
                    return True
        return False

    def _classes(self) -> dict[str, ast.ClassDef]:
        return {n.name: n for n in self.tree.body if isinstance(n, ast.ClassDef)}

    def _defined(self, cls: ast.ClassDef) -> set[str]:
        """Names a class and its same-module bases define: methods, class and self attributes."""
        names: set[str] = set()
        for node in ast.walk(cls):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
        classes = self._classes()
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id in classes and base.id != cls.name:
                names |= self._defined(classes[base.id])
        return names

    def _subclass(self, cls: ast.ClassDef) -> None:
        if not self._flwr_derived(cls):
            return
        defined = self._defined(cls)
        for node in ast.walk(cls):
            if not (isinstance(node, ast.Attribute) and _private(node.attr)):
                continue
            owner = ast.unparse(node.value)
            if owner in ("self", "cls", "super()") and node.attr not in defined:
                self._flag(node, f"private attribute {node.attr} of a flwr base of {cls.name}")


def check_file(path: Path) -> list[Violation]:
    """The violations in one source file."""
    rel = str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path)
    return FlwrUseChecker(path.read_text(encoding="utf-8"), rel).check()


def project_files() -> list[Path]:
    """Every ``.py`` file of :data:`PACKAGES`."""
    files = [p for pkg in PACKAGES for p in sorted((REPO_ROOT / pkg).rglob("*.py"))]
    assert files, "no project files found"
    return files


# ---- the rule on the project --------------------------------------------------------------


def test_no_module_but_the_seam_uses_flower_internals():
    found = [v for p in project_files() if p != SEAM for v in check_file(p)]
    assert found == [], "use fedcare.flower.flwr_internals instead:\n" + "\n".join(map(str, found))


def test_the_seam_is_where_the_internals_are():
    # The checker sees the real internals (so a copy of them elsewhere would be seen too).
    found = "\n".join(v.what for v in check_file(SEAM))
    for internal in (
        "non-public flwr module flwr.supernode",
        "non-public flwr module flwr.supercore",
        "non-public flwr module flwr.common.constant",
    ):
        assert internal in found


def test_the_public_modules_are_flowers():
    for module in PUBLIC_MODULES:
        assert is_flwr_module(module), module
    import flwr

    assert {f"flwr.{m}" for m in flwr.__all__} <= PUBLIC_MODULES


# ---- the checker on hand-made code --------------------------------------------------------


def _whats(source: str) -> list[str]:
    return [v.what for v in FlwrUseChecker(source).check()]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "import flwr.supernode.start_client_internal as loop\n",
            "non-public flwr module flwr.supernode",
        ),
        (
            "def f():\n    from flwr.common.constant import ErrorCode\n",
            "non-public flwr module flwr.common.constant",
        ),
        ("from flwr import supercore\n", "non-public flwr module flwr.supercore"),
        ("from flwr.app import _helper\n", "private flwr name flwr.app._helper"),
        (
            "import flwr\nflwr.supernode.start_client_internal.time = None\n",
            "non-public flwr module flwr.supernode",
        ),
        (
            "from flwr.app import Message\nMessage._private_thing\n",
            "private flwr name flwr.app.Message._private_thing",
        ),
        (
            "import importlib\nimportlib.import_module('flwr.supernode.runtime')\n",
            "non-public flwr module flwr.supernode",
        ),
        (
            "from flwr.serverapp import strategy\ngetattr(strategy.FedAvg, '_check')\n",
            "private flwr name flwr.serverapp.strategy.FedAvg._check",
        ),
        (
            "from flwr.serverapp.strategy import FedAvg\n"
            "class A(FedAvg):\n"
            "    def f(self, replies):\n"
            "        return self._check_and_log_replies(replies, is_train=True)\n",
            "private attribute _check_and_log_replies of a flwr base of A",
        ),
        (
            "from flwr.serverapp.strategy import FedAvg\n"
            "class A(FedAvg):\n    pass\n"
            "class B(A):\n    def f(self):\n        return super()._inner()\n",
            "private attribute _inner of a flwr base of B",
        ),
    ],
)
def test_the_checker_finds(source, expected):
    assert expected in _whats(source)


@pytest.mark.parametrize(
    "source",
    [
        "from flwr.app import ArrayRecord, Message\nfrom flwr.serverapp import Grid, ServerApp\n",
        "from flwr.serverapp import strategy\nstrategy.FedAvg\n",
        "import flwr.simulation\nflwr.simulation.run_simulation\n",
        "from flwr.serverapp.strategy import Strategy\n"
        "class S(Strategy):\n"
        "    def __init__(self):\n        self._mine = 1\n"
        "    def f(self):\n        return self._mine, self._helper(), self.__class__\n"
        "    def _helper(self):\n        return 0\n",
        "from flwr.app import Message\nMessage.__name__\n",
        "import fedcare.flower.flwr_internals as seam\nseam._private\n",
    ],
)
def test_the_checker_allows(source):
    assert _whats(source) == []
