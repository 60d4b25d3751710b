"""The shape of one bad-input case, and lazy access to the real files the cases derive from.

A :class:`Case` says how to build its inputs (a function that writes into the case's own
temporary folder, never anywhere else), the ``fedcare`` command line to run, and what must come
out: ``refused`` (exit 2, one line naming ``names`` and, where given, one of ``rows``) or
``accepted`` (exit 0 and the ``--out`` file written). Command lines use three placeholders:
``{in}`` (the case's input folder), ``{work}`` (the case's folder, also the working directory
of the command) and ``{port}`` (a TCP port free when the case starts).
"""

from __future__ import annotations

import csv
import io
import os
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

#: Where the real data sets live (the project's convention: ``../shared/datasets``).
DEFAULT_DATA_ROOT = Path(os.environ.get("FEDCARE_SHARED_DATA", "/work/shared/datasets"))
DIABETES_ZIP = "diabetes130/dataset_diabetes.zip"
DIABETES_MEMBER = "dataset_diabetes/diabetic_data.csv"
MIMIC_DIR = "mimic3-demo"
#: The four tables the MIMIC-III loader requires (CHARTEVENTS is optional).
MIMIC_TABLES = ("ADMISSIONS", "PATIENTS", "ICUSTAYS", "LABEVENTS")
#: Small run settings shared by every case that trains (two cores, many cases).
SMALL = ("--rounds", "2", "--clients", "3", "--stage2-epochs", "1", "--quiet")
OUT_FILE = "{work}/out/results.json"

Builder = Callable[[Path, "Sources"], None]


def _nothing(_inp: Path, _src: Sources) -> None:
    """Build no input (the case uses the real files or none)."""


@dataclass(frozen=True)
class Case:
    """One bad (or valid but unusual) input and the outcome the project promises.

    Parameters
    ----------
    id
        Short unique name, ``<category prefix>-<what>``.
    category
        Group in the report (``diabetes-content``, ``mimic``, ``config-json``, ...).
    expect
        ``"refused"`` or ``"accepted"``.
    argv
        Arguments after ``fedcare``, with ``{in}``/``{work}`` placeholders.
    build
        Writes the case's inputs into its input folder.
    names
        Strings the message must contain (word-bounded, case-insensitive); ``a|b`` means either.
    rows
        Data row numbers of which the message must name at least one (empty: not checked).
    secrets
        Strings that must never appear in the output (identifiers, row values).
    as_nobody
        Run the command as user ``nobody`` (needed for permission cases when run as root).
    outputs
        Paths (with placeholders) an accepted case must have written.
    timeout
        Seconds before the case counts as hung (``None``: the runner's default).
    note
        Why the expectation is what it is, where it is not obvious.
    teardown
        Run after the command whatever happened (e.g. stop the coordinator a builder started);
        the runner also ends every process still naming the case's folder.
    volatile
        Globs (relative to the case folder) of files a process the builder started keeps
        writing (a SuperLink's database and log): their changes are not the command's.
    """

    id: str
    category: str
    expect: str
    argv: tuple[str, ...]
    build: Builder = _nothing
    names: tuple[str, ...] = ()
    rows: tuple[int, ...] = ()
    secrets: tuple[str, ...] = ()
    as_nobody: bool = False
    outputs: tuple[str, ...] = ()
    timeout: float | None = None
    note: str = ""
    env: dict[str, str] = field(default_factory=dict)
    teardown: Callable[[Path], None] | None = None
    volatile: tuple[str, ...] = ()


def fill(text: str, inp: Path, work: Path, port: int | None = None) -> str:
    """Replace the ``{in}``, ``{work}`` (and, given, ``{port}``) placeholders in ``text``."""
    out = text.replace("{in}", str(inp)).replace("{work}", str(work))
    return out if port is None else out.replace("{port}", str(port))


class Sources:
    """Read-only, cached views of the real data files.

    Parameters
    ----------
    root
        The shared datasets folder (holding ``diabetes130/`` and ``mimic3-demo/``).
    """

    def __init__(self, root: Path = DEFAULT_DATA_ROOT) -> None:
        self.root = root

    @property
    def diabetes_zip(self) -> Path:
        """The published archive."""
        return self.root / DIABETES_ZIP

    @property
    def mimic_dir(self) -> Path:
        """The MIMIC-III demo folder."""
        return self.root / MIMIC_DIR

    @cached_property
    def diabetes_bytes(self) -> bytes:
        """The bytes of ``diabetic_data.csv`` as published (CRLF line endings)."""
        with zipfile.ZipFile(self.diabetes_zip) as zf:
            return zf.read(DIABETES_MEMBER)

    @cached_property
    def diabetes_lines(self) -> tuple[str, ...]:
        """Header and data lines of ``diabetic_data.csv``, without line endings."""
        text = self.diabetes_bytes.decode("utf-8")
        lines = text.split("\r\n")
        if lines and lines[-1] == "":
            lines.pop()
        return tuple(lines)

    @cached_property
    def diabetes_header(self) -> tuple[str, ...]:
        """The 50 column names."""
        return tuple(self.diabetes_lines[0].split(","))

    def diabetes_cell(self, row: int, column: str) -> str:
        """The value in 1-based data row ``row`` of ``column``."""
        return self.diabetes_lines[row].split(",")[self.diabetes_header.index(column)]

    def diabetes_ids(self, *rows: int) -> tuple[str, ...]:
        """``encounter_id`` and ``patient_nbr`` of the given data rows (must never be printed)."""
        out: list[str] = []
        for r in rows:
            out += [self.diabetes_cell(r, "encounter_id"), self.diabetes_cell(r, "patient_nbr")]
        return tuple(out)

    def mimic_table(self, name: str) -> tuple[list[str], list[list[str]]]:
        """Header and rows of a MIMIC table (fresh copies, safe to modify)."""
        header, rows = self._mimic_cache(name)
        return list(header), [list(r) for r in rows]

    def _mimic_cache(self, name: str) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
        cache: dict[str, tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]]
        cache = self.__dict__.setdefault("_mimic", {})
        if name not in cache:
            with open(self.mimic_dir / f"{name}.csv", newline="", encoding="utf-8") as fh:
                reader = csv.reader(fh)
                header = tuple(next(reader))
                cache[name] = (header, tuple(tuple(r) for r in reader))
        return cache[name]


def write_diabetes(
    inp: Path,
    lines: list[str] | tuple[str, ...],
    *,
    eol: str = "\r\n",
    name: str = "diabetic_data.csv",
    encoding: str = "utf-8",
) -> Path:
    """Write Diabetes 130 lines as ``inp/name`` (header first) and return the path."""
    path = inp / name
    path.write_bytes((eol.join(lines) + eol).encode(encoding))
    return path


def mimic_csv(header: list[str], rows: list[list[str]], eol: str = "\n") -> str:
    """A MIMIC table as CSV text (minimal quoting)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator=eol)
    writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue()


def copy_mimic(inp: Path, src: Sources, skip: tuple[str, ...] = ()) -> None:
    """Copy the four required MIMIC tables into ``inp`` (less ``skip``)."""
    for name in MIMIC_TABLES:
        if name not in skip:
            (inp / f"{name}.csv").write_bytes((src.mimic_dir / f"{name}.csv").read_bytes())
