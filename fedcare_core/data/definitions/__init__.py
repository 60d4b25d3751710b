"""The built-in datasets' definition files (:mod:`fedcare_core.data.declared` reads them)."""

from __future__ import annotations

from pathlib import Path

#: The folder holding ``<dataset>.yaml``.
DEFINITIONS = Path(__file__).resolve().parent


def builtin_definition(name: str) -> Path:
    """The definition file of built-in dataset ``name``."""
    return DEFINITIONS / f"{name}.yaml"
