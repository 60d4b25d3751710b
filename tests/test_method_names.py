"""No code outside a method's own folders names it: the code dispatches through its class.

A method's own folders are its package under ``fedcare_core/algorithms/`` and the federation
layer's folder of the same name (``fedcare/flower/<package>/``). A mention is the method's name
(as configurations write it, lower case) as an identifier or a word of a string; docstrings,
comments and prose ("FedAvg's E") may name it. Names that are also other things (the project,
the ``local`` backend) are not checked, and the paper's experiment grids name methods as data
(``fedcare/experiments/paper_methods.toml``). :data:`REMAINING` lists what is still to mend; it
only shrinks.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Algorithm names that also name something else.
_SHARED_WORDS = {"fedcare", "local"}
_CODE_ROOTS = ("fedcare_core", "fedcare", "flows", "tasks", "data_checks")
#: Method → the files outside its folders that still name it.
REMAINING: dict[str, list[str]] = {
    # FedCARE's own documents omit the baselines section (a federation schema's digest reads it).
    "fedcare-b": ["fedcare_core/config/limits.py"],
}


def _words(source: str) -> set[str]:
    """The module's identifiers and its strings' words, comments and docstrings aside."""
    tree = ast.parse(source)
    docs = {
        node.body[0].value.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    words: set[str] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.NAME:
            words.add(token.string)
        elif token.type == tokenize.STRING and token.start[0] not in docs:
            words.update(re.split(r"[^\w-]+", token.string))
    return words


def _methods() -> dict[str, str]:
    """Each of FedCARE's algorithms → its package (``fedavg`` for ``fedprox``)."""
    doc = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    entries = doc["project"]["entry-points"]["fedcare.algorithms"]
    return {name: value.split(":")[0].split(".")[2] for name, value in entries.items()}


def test_no_code_outside_a_methods_folders_names_it():
    words = {
        path.relative_to(ROOT).as_posix(): _words(path.read_text(encoding="utf-8"))
        for top in _CODE_ROOTS
        for path in sorted((ROOT / top).rglob("*.py"))
    }
    naming: dict[str, list[str]] = {}
    for name, package in _methods().items():
        if name in _SHARED_WORDS:
            continue
        own = (f"fedcare_core/algorithms/{package}/", f"fedcare/flower/{package}/")
        found = [p for p, held in words.items() if not p.startswith(own) and name in held]
        if found:
            naming[name] = found
    assert naming == REMAINING
