"""Shared fixtures of the declared-dataset tests: a small valid definition, the example's files.

Every file is written under pytest's ``tmp_path``; no row is a patient's (the example extract is
drawn by ``examples/hospital/make_extract.py`` from a seed, the small tables are made up here).
"""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path
from types import ModuleType

import pandas as pd

from tests.conftest import REPO_ROOT

#: The worked example of a hospital's definition, and its generator.
EXAMPLE_DIR = REPO_ROOT / "examples" / "hospital"
EXAMPLE_DEFINITION = EXAMPLE_DIR / "definition.yaml"

#: A small valid definition: each malformed file of the parse tests changes one thing in it.
SMALL_DEFINITION = """\
version: 1
name: tiny
title: A tiny ward
source:
  files: [rows.csv]
identifiers:
  patient: PID
  encounter: EID
strata: SRC
cohort:
  include: {column: DISPO, ne: AMA}
columns:
  ADMIT: {type: datetime}
  DISCH: {type: datetime}
  AGE: {type: integer, range: [18, 110], known_at: admission}
  SEX: {type: categorical, vocabulary: [F, M], known_at: admission}
  SRC: {type: categorical, vocabulary: [ED, CLINIC], known_at: admission}
  LAB: {type: float, range: [0, 50], gaps: true, known_at: stay}
  CODE: {type: categorical, pattern: '[A-Z][0-9]{2}', gaps: true, known_at: admission}
  DISPO: {type: categorical, vocabulary: [HOME, AMA, EXPIRED]}
  READMIT: {type: categorical, vocabulary: [Y, N]}
objectives:
  - name: mortality
    kind: binary
    predicted_at: admission
    label: {column: DISPO, eq: EXPIRED}
  - name: readmission
    kind: binary
    predicted_at: discharge
    label: {column: READMIT, eq: "Y"}
    exclude: {column: DISPO, eq: EXPIRED}
  - name: los
    kind: regression
    predicted_at: admission
    label: {days_between: [ADMIT, DISCH]}
partition:
  common: [AGE, SEX]
  private:
    mortality: [SRC]
    readmission: [LAB, CODE]
    los: [SRC]
"""

#: Rows of :data:`SMALL_DEFINITION` (made up), as a CSV file holds them.
SMALL_ROWS = """\
PID,EID,ADMIT,DISCH,AGE,SEX,SRC,LAB,CODE,DISPO,READMIT
p1,e1,2024-01-01T08:00,2024-01-03T08:00,40,F,ED,1.5,A01,HOME,N
p1,e2,2024-02-01T08:00,2024-02-01T20:00,41,F,ED,,B02,EXPIRED,N
p2,e3,2024-01-05T00:00,2024-01-06T00:00,70,M,CLINIC,3,,AMA,Y
p3,e4,2024-03-01T10:00,2024-03-05T10:00,65,M,CLINIC,4.25,C10,HOME,Y
"""


def changed(text: str, old: str, new: str) -> str:
    """``text`` with its one occurrence of ``old`` replaced by ``new``."""
    assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times"
    return text.replace(old, new)


def write(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` (UTF-8); return the path."""
    path.write_text(text, encoding="utf-8")
    return path


@cache
def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "hospital_make_extract", EXAMPLE_DIR / "make_extract.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def example_extract(rows: int, seed: int = 3) -> pd.DataFrame:
    """A synthetic extract in the example definition's columns (``make_extract``)."""
    frame: pd.DataFrame = _generator().make_extract(rows, seed)
    return frame


def example_definition_copy(folder: Path, old: str | None = None, new: str = "") -> Path:
    """The example definition written into ``folder`` (one change applied, if given)."""
    text = EXAMPLE_DEFINITION.read_text(encoding="utf-8")
    if old is not None:
        text = changed(text, old, new)
    return write(folder / "definition.yaml", text)
