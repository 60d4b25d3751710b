"""One cohort file split by patient into one CSV per simulated hospital (a multi-site test).

:func:`split_sites` deals the file's patients (``patient_nbr``) over the sites with a seeded
permutation, round-robin, so every encounter of a patient lands at one site and site sizes (in
patients) differ by at most one. The split works on the file's text, not on a parsed table:
the ``csv`` module only finds each record's patient, and each site's file is the source's
header line followed by the source's own record text, in the source's order, so a site file
reads exactly like the original (quoting, spacing and line ending included).

:func:`write_sites` writes the files and a ``sites.json`` manifest into a temporary sibling
folder, owner-only from creation (0700 and 0600: patient-level data), and renames it into place
at the end, so an error never leaves a half-written folder.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fedcare_core.config import DataConfig
from fedcare_core.config.seeds import derive_rng
from fedcare_core.data.client_store import FILE_MODE, FOLDER_MODE
from fedcare_core.data.clients import draw_client_objectives
from fedcare_core.errors import ConfigError, DataError
from fedcare_core.files.output_paths import check_output_dir

__all__ = [
    "MANIFEST_FILE",
    "MIN_SITES",
    "PATIENT_COLUMN",
    "Site",
    "check_out_dir",
    "decode_csv",
    "draw_site_objectives",
    "site_manifest",
    "split_sites",
    "write_sites",
]

#: The column naming a record's patient: all of a patient's records go to one site.
PATIENT_COLUMN = "patient_nbr"
#: The manifest listing each site's file and objectives, next to the site files.
MANIFEST_FILE = "sites.json"
#: A federation needs at least two sites.
MIN_SITES = 2
#: Values of the patient column that name no patient (``?`` is the file's missing marker).
_MISSING = ("", "?")
_BOM = "\ufeff"


@dataclass(frozen=True)
class Site:
    """One site's share of the source file.

    Attributes
    ----------
    name
        ``site-<i>``.
    text
        The file's content: the source's header line, then the site's records as in the source.
    patients
        How many distinct patients the site holds.
    encounters
        How many records (rows) the site holds.
    """

    name: str
    text: str
    patients: int
    encounters: int

    @property
    def file_name(self) -> str:
        """The site's CSV file name, ``<name>.csv``."""
        return f"{self.name}.csv"


def decode_csv(data: bytes, name: str) -> str:
    """The file's bytes as text (UTF-8; a byte-order mark is kept).

    Parameters
    ----------
    data
        The file's bytes.
    name
        Its display name, for errors.

    Returns
    -------
    str
        The decoded text, line endings untouched.

    Raises
    ------
    DataError
        If the file is empty (or blank) or not UTF-8 text.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"not UTF-8 text ({exc})", file=name) from None
    if not text.removeprefix(_BOM).strip():
        raise DataError("the file is empty", file=name)
    return text


def _records(text: str, name: str) -> list[tuple[list[str], str]]:
    """Each record's fields and its exact source text (blank lines dropped, as pandas does)."""
    lines = list(io.StringIO(text, newline=""))
    reader = csv.reader(lines, strict=True)
    out: list[tuple[list[str], str]] = []
    start = 0
    try:
        for fields in reader:
            # The reader reads exactly the lines of one record (several when a quoted field
            # holds a line break), so the lines it consumed are that record's text.
            record = "".join(lines[start : reader.line_num])
            start = reader.line_num
            if fields:
                out.append((fields, record))
    except csv.Error as exc:
        raise DataError(f"malformed CSV at line {reader.line_num} ({exc})", file=name) from None
    return out


def _line_ending(record: str) -> str:
    """The line ending a record's text ends with, or ``""``."""
    if record.endswith("\r\n"):
        return "\r\n"
    return record[-1] if record and record[-1] in "\r\n" else ""


def _patients(records: list[tuple[list[str], str]], name: str) -> list[str]:
    """Each data record's patient (the header is ``records[0]``); refuse a bad column or row."""
    header = records[0][0]
    if header.count(PATIENT_COLUMN) != 1:
        what = "no" if PATIENT_COLUMN not in header else "more than one"
        raise DataError(
            f"the header has {what} {PATIENT_COLUMN} column; split-sites needs one to keep "
            "each patient's encounters at one site",
            file=name,
            column=PATIENT_COLUMN,
        )
    col = header.index(PATIENT_COLUMN)
    ragged = [i for i, (fields, _) in enumerate(records[1:], 1) if len(fields) != len(header)]
    if ragged:
        raise DataError(
            f"a different number of fields than the header's {len(header)} (a ragged row)",
            file=name,
            rows=ragged,
        )
    patients = [fields[col].strip() for fields, _ in records[1:]]
    missing = [i for i, p in enumerate(patients, 1) if p in _MISSING]
    if missing:
        raise DataError("no patient identifier", file=name, column=PATIENT_COLUMN, rows=missing)
    return patients


def _check_sites(sites: int) -> None:
    if isinstance(sites, bool) or not isinstance(sites, int) or sites < MIN_SITES:
        raise ConfigError(f"--sites must be an integer of at least {MIN_SITES}, got {sites!r}")


def split_sites(text: str, sites: int, seed: int, *, name: str = "<text>") -> tuple[Site, ...]:
    """Split a CSV's text by patient over ``sites`` sites.

    Patients are numbered in the order they first appear, permuted with
    ``derive_rng(seed, "split-sites")`` and dealt round-robin: site sizes (in patients) differ
    by at most one, and the same text and seed give the same split.

    Parameters
    ----------
    text
        The whole file (a header line, then one record per row; quoted fields may span lines).
        A leading byte-order mark is written at the head of every site's file.
    sites
        How many sites (at least :data:`MIN_SITES`).
    seed
        The split's seed.
    name
        The file's display name, for errors.

    Returns
    -------
    tuple of Site
        ``site-0`` .. ``site-<sites-1>``. Their records are disjoint and together all of the
        source's records, each written as in the source, in the source's order. A last record
        with no line ending gets the file's (the header's), so it cannot run into the next.

    Raises
    ------
    ConfigError
        If ``sites`` is below :data:`MIN_SITES`.
    DataError
        If the text is empty or malformed CSV, has no (or several) :data:`PATIENT_COLUMN`,
        a ragged row or a row with no patient, or fewer patients than sites.
    """
    _check_sites(sites)
    bom = _BOM if text.startswith(_BOM) else ""
    records = _records(text.removeprefix(bom), name)
    if not records:
        raise DataError("the file is empty", file=name)
    patients = _patients(records, name)
    if not patients:
        raise DataError("the file has a header but no data rows", file=name)
    index: dict[str, int] = {}
    patient_of_row = np.array([index.setdefault(p, len(index)) for p in patients], dtype=np.int64)
    if len(index) < sites:
        raise DataError(
            f"{len(index)} patient(s) cannot be split over {sites} sites (--sites)",
            file=name,
            column=PATIENT_COLUMN,
        )
    order = derive_rng(seed, "split-sites").permutation(len(index))
    site_of_patient = np.empty(len(index), dtype=np.int64)
    site_of_patient[order] = np.arange(len(index)) % sites
    site_of_row = site_of_patient[patient_of_row]
    header = records[0][1]
    ending = _line_ending(header)
    parts: list[list[str]] = [[bom + header] for _ in range(sites)]
    for (_, record), site in zip(records[1:], site_of_row.tolist(), strict=True):
        parts[site].append(record if _line_ending(record) else record + ending)
    n_patients = np.bincount(site_of_patient, minlength=sites)
    return tuple(
        Site(f"site-{i}", "".join(parts[i]), int(n_patients[i]), len(parts[i]) - 1)
        for i in range(sites)
    )


def draw_site_objectives(
    dataset: str, objective_names: Sequence[str], sites: int, per_site: int, seed: int
) -> list[tuple[str, ...]]:
    """Each site's objectives, drawn as a run draws its clients' (seeded, covering all if it can).

    Parameters
    ----------
    dataset
        The dataset's name (e.g. ``diabetes130``).
    objective_names
        The dataset's objectives, in its order.
    sites
        How many sites.
    per_site
        How many distinct objectives each site gets, 1 to ``len(objective_names)``.
    seed
        The draw's seed (:func:`~fedcare_core.data.clients.draw_client_objectives`).

    Returns
    -------
    list of tuple of str
        One tuple of objective names per site.

    Raises
    ------
    ConfigError
        If ``sites`` or ``per_site`` is out of range.
    """
    _check_sites(sites)
    n = len(objective_names)
    if isinstance(per_site, bool) or not isinstance(per_site, int) or not 1 <= per_site <= n:
        raise ConfigError(
            f"--objectives-per-site must be between 1 and {n} (the objectives of {dataset}: "
            f"{', '.join(objective_names)}), got {per_site!r}"
        )
    config = DataConfig(dataset=dataset, clients=sites, objectives_per_client=per_site)
    return draw_client_objectives(tuple(objective_names), config, seed)


def site_manifest(
    sites: Sequence[Site], objectives: Sequence[Sequence[str]]
) -> list[dict[str, object]]:
    """The ``sites.json`` content: each site's name, file (relative to it) and objectives.

    Parameters
    ----------
    sites
        The sites, as :func:`split_sites` returns them.
    objectives
        Each site's objectives, as :func:`draw_site_objectives` returns them.

    Returns
    -------
    list of dict
        ``[{"name": "site-0", "data": "site-0.csv", "objectives": [...]}, ...]``.
    """
    if len(sites) != len(objectives):
        raise ConfigError(f"{len(sites)} sites but {len(objectives)} objective draws")
    return [
        {"name": s.name, "data": s.file_name, "objectives": list(o)}
        for s, o in zip(sites, objectives, strict=True)
    ]


def check_out_dir(out: str | Path) -> Path:
    """Refuse an output folder that exists and is not an empty folder, or cannot be written.

    Parameters
    ----------
    out
        Where the site files will go (``--out``).

    Returns
    -------
    Path
        ``out`` as an absolute path.

    Raises
    ------
    ConfigError
        If ``out`` is a link, a file or a non-empty folder, or its parent cannot be written in.
    """
    target = Path(os.path.abspath(out))
    if target.is_symlink():
        raise ConfigError(f"--out {out} is a symbolic link; give a new or empty folder")
    if target.exists():
        if not target.is_dir():
            raise ConfigError(f"--out {out} is a file; give a new or empty folder")
        if any(target.iterdir()):
            raise ConfigError(f"--out {out} is a folder that is not empty; give a new or empty one")
    check_output_dir(target.parent if target.exists() else target, "--out")
    return target


def _write_new(path: Path, data: bytes) -> None:
    """Create ``path`` (which must not exist) with mode 0600 and write ``data``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())  # on disk before the folder is renamed into place


def write_sites(
    sites: Sequence[Site], objectives: Sequence[Sequence[str]], out: str | Path
) -> Path:
    """Write each site's CSV and ``sites.json`` into the new folder ``out``, all or nothing.

    Parameters
    ----------
    sites
        The sites, as :func:`split_sites` returns them.
    objectives
        Each site's objectives.
    out
        The folder to create (0700; files 0600 from creation). An empty folder is replaced.
        Missing parent folders are created (0700).

    Returns
    -------
    Path
        The manifest, ``out/sites.json``.

    Raises
    ------
    ConfigError
        If ``out`` exists and is not an empty folder (also when it appears meanwhile).
    DataError
        If writing fails; nothing is left behind.
    """
    target = check_out_dir(out)
    manifest = site_manifest(sites, objectives)
    try:
        target.parent.mkdir(parents=True, exist_ok=True, mode=FOLDER_MODE)
        # mkdtemp makes the folder 0700; a sibling, so the final rename stays on one file system.
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    except OSError as exc:
        raise DataError(f"cannot create the output folder ({exc})", file=str(out)) from None
    try:
        for site in sites:
            _write_new(tmp / site.file_name, site.text.encode("utf-8"))
        _write_new(tmp / MANIFEST_FILE, (json.dumps(manifest, indent=1) + "\n").encode())
        try:
            os.rename(tmp, target)  # replaces an empty folder; refuses anything else
        except OSError as exc:
            raise ConfigError(
                f"--out {out} cannot be created ({exc.strerror or exc}); give a new or empty folder"
            ) from None
    except OSError as exc:
        raise DataError(f"cannot write the site files ({exc})", file=str(out)) from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target / MANIFEST_FILE
