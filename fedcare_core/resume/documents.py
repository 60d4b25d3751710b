"""Finished results kept as documents: one JSON file per key, written atomically.

A grid keeps each cell's ``results.json`` document under ``<out>/cells/<fingerprint>/<key>.json``
(:func:`cell_store`, the fingerprint :func:`~fedcare_core.resume.keys.base_fingerprint` of its
base configuration); a cell whose document exists is done, and an interrupted grid resumes by
running the others. A document is written whole or not at all (:func:`write_document`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fedcare_core.config import ExperimentConfig
from fedcare_core.files.atomic import write_atomic
from fedcare_core.resume.keys import base_fingerprint


def cell_store(out_dir: str | Path, base: ExperimentConfig) -> Path:
    """Where a grid on ``base`` keeps its cell documents: ``<out>/cells/<fingerprint>``."""
    return Path(out_dir) / "cells" / base_fingerprint(base)


def write_document(path: Path, document: dict[str, Any]) -> None:
    """A result document, atomically (its JSON form kept: NaN as written, keys sorted)."""
    text = json.dumps(document, indent=1, sort_keys=True, allow_nan=True)
    write_atomic(path, text.encode())
