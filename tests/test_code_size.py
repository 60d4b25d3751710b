"""Small modules: no file over 500 lines and no function over 100 lines (STYLE.md).

Covers the project's packages and the tests; a function's length runs from its ``def`` line
(decorators excluded) to its last line, docstring included.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import PROJECT_PACKAGES, REPO_ROOT

MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 100


def python_files() -> list[Path]:
    """Every .py file of the project's packages and of the tests."""
    roots = [REPO_ROOT / p for p in (*PROJECT_PACKAGES, "tests")]
    return sorted(f for root in roots for f in root.rglob("*.py"))


def oversized(path: Path, root: Path = REPO_ROOT) -> list[str]:
    """What in ``path`` is over the limits, as ``file:line name (n lines)``."""
    text = path.read_text()
    rel = path.relative_to(root)
    out = []
    if text.count("\n") > MAX_FILE_LINES:
        out.append(f"{rel}: {text.count(chr(10))} lines")
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                out.append(f"{rel}:{node.lineno} {node.name} ({length} lines)")
    return out


def test_no_file_or_function_is_over_the_limits() -> None:
    files = python_files()
    assert len(files) > 150
    assert [o for f in files for o in oversized(f)] == []


def test_an_oversized_function_and_file_are_reported(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    path = tmp_path / "probe.py"
    path.write_text(f"def f():\n{body}\n")
    assert oversized(path, tmp_path) == [f"probe.py:1 f ({MAX_FUNCTION_LINES + 1} lines)"]
    path.write_text("x = 1\n" * (MAX_FILE_LINES + 1))
    assert oversized(path, tmp_path) == [f"probe.py: {MAX_FILE_LINES + 1} lines"]
