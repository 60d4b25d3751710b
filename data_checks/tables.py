"""The tables the data checks validate: raw source tables and per-client partition tables.

Nothing here imports Great Expectations. Raw tables are read so that a check sees what is in the
file, not what a loader made of it: MIMIC-III with pandas' own type inference and upper-cased
headers (a dataset defined by a file, Diabetes 130-US among them, is read as text by its
definition: :class:`data_checks.declared.DeclaredChecks`). Client partitions are summarised
from each client's encoded arrays (labels, a per-row "features finite" flag and the split),
and the patient-assignment table maps a salted hash of each patient key to the (client,
split) places it occupies; the salt is drawn per run and the table never leaves memory.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from fedcare_core.config import DataConfig
from fedcare_core.data.clients import (
    SPLITS,
    ClientData,
    Federation,
    place_patients,
)
from fedcare_core.data.cohort import Cohort
from fedcare_core.data.mimic3 import MIMIC3_REQUIRED_COLUMNS
from fedcare_core.errors import DataError

# --------------------------------------------------------------------------------------------
# MIMIC-III
# --------------------------------------------------------------------------------------------

# MIMIC3_REQUIRED_COLUMNS (imported above) is the loader's own list: a check requires those
# columns and accepts any others.

#: The MIMIC-III tables checked, in the order they are read.
_MIMIC3_TABLES: tuple[str, ...] = tuple(MIMIC3_REQUIRED_COLUMNS)

#: Event tables can hold tens of millions of rows (LABEVENTS ≈ 28 M): only their required
#: columns are read, and only the first rows up to this many (a head sample).
_DEFAULT_MAX_EVENT_ROWS = 2_000_000

_EVENT_TABLES = frozenset({"LABEVENTS"})


def _normalise_headers(df: pd.DataFrame) -> pd.DataFrame:
    """Return ``df`` with its column names stripped and upper-cased (MIMIC-III spelling)."""
    out = df.copy(deep=False)
    out.columns = [str(c).strip().upper() for c in df.columns]
    return out


def find_mimic3_table(data_dir: str | Path, table: str) -> Path:
    """Return the file holding ``table``: ``NAME.csv`` or ``NAME.csv.gz``, any case.

    Raises
    ------
    DataError
        If no file, or more than one, could hold the table.

    """
    root = Path(data_dir).expanduser()
    if not root.is_dir():
        raise DataError("not a directory", file=str(root))
    wanted = {f"{table.lower()}.csv", f"{table.lower()}.csv.gz"}
    hits = sorted(p for p in root.iterdir() if p.is_file() and p.name.lower() in wanted)
    if len(hits) != 1:
        what = "no file" if not hits else f"{len(hits)} files"
        raise DataError(f"{what} could hold MIMIC-III table {table}", file=str(root))
    return hits[0]


def read_mimic3_raw(
    data_dir: str | Path, *, max_event_rows: int | None = _DEFAULT_MAX_EVENT_ROWS
) -> dict[str, pd.DataFrame]:
    """Read the MIMIC-III tables the loader uses, with upper-cased headers.

    Parameters
    ----------
    data_dir
        Directory of the raw MIMIC-III CSV files (``.csv`` or ``.csv.gz``, any case).
    max_event_rows
        Rows read from each event table (``LABEVENTS``), from the top; ``None`` reads all.
        Event tables are read with their required columns only; the small tables in full.

    Returns
    -------
    dict of str to pandas.DataFrame
        Keyed by upper-case table name (:data:`_MIMIC3_TABLES`). Column types are pandas'
        inference, so a stray text value in a numeric column shows up as a text column.

    Raises
    ------
    DataError
        If a table is missing or cannot be read as CSV.

    """
    out: dict[str, pd.DataFrame] = {}
    for table in _MIMIC3_TABLES:
        path = find_mimic3_table(data_dir, table)
        kwargs: dict[str, object] = {"low_memory": False}
        if table in _EVENT_TABLES:
            wanted = set(MIMIC3_REQUIRED_COLUMNS[table])
            kwargs["usecols"] = lambda c, w=wanted: str(c).strip().upper() in w
            kwargs["nrows"] = max_event_rows
        try:
            df: pd.DataFrame = pd.read_csv(path, **kwargs)  # type: ignore[call-overload]
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
            raise DataError(
                f"cannot read the {table} table as CSV ({exc})", file=str(path)
            ) from exc
        except (OSError, EOFError) as exc:
            raise DataError(f"cannot read the {table} table ({exc})", file=str(path)) from exc
        out[table] = _normalise_headers(df)
    return out


# --------------------------------------------------------------------------------------------
# Client partitions
# --------------------------------------------------------------------------------------------

#: Column holding the split name (train, val, test) in a client partition table.
SPLIT_COLUMN = "split"
#: Column that is True where every encoded feature of the row is finite.
FEATURES_FINITE_COLUMN = "features_finite"
#: Prefix of a partition table's label columns (``label_<objective>``).
_LABEL_PREFIX = "label_"


def label_column(objective: str) -> str:
    """The partition-table column holding ``objective``'s label."""
    return f"{_LABEL_PREFIX}{objective}"


def client_table_name(client_id: int) -> str:
    """The table name of a client's partition in reports (``client_03``)."""
    return f"client_{client_id:02d}"


def client_partition_table(client: ClientData) -> pd.DataFrame:
    """Summarise one client's encoded splits as one table, one row per sample.

    Parameters
    ----------
    client
        The client, as built by :func:`fedcare_core.data.clients.build_federation`.

    Returns
    -------
    pandas.DataFrame
        Columns ``split`` (train/val/test), ``features_finite`` (bool: every encoded common and
        private value of the row is finite) and ``label_<objective>`` (float, NaN = not
        applicable) for each of the client's objectives. No identifiers, no feature values.

    """
    parts = []
    for name in SPLITS:
        arr = client.split(name)
        finite = np.isfinite(arr.x_common).all(axis=1) & np.isfinite(arr.x_private).all(axis=1)
        part: dict[str, object] = {
            SPLIT_COLUMN: np.full(arr.n, name, dtype=object),
            FEATURES_FINITE_COLUMN: finite,
        }
        for j, obj in enumerate(client.objectives):
            part[label_column(obj)] = arr.y[:, j].astype(np.float64)
        parts.append(pd.DataFrame(part))
    table = pd.concat(parts, ignore_index=True)
    table[SPLIT_COLUMN] = table[SPLIT_COLUMN].astype(str)
    return table


def client_partition_tables(federation: Federation) -> dict[str, pd.DataFrame]:
    """One partition table per client, keyed by :func:`client_table_name`."""
    return {client_table_name(c.client_id): client_partition_table(c) for c in federation.clients}


# --------------------------------------------------------------------------------------------
# Patient assignment
# --------------------------------------------------------------------------------------------

#: Table name of the patient-assignment table in reports.
ASSIGNMENT_TABLE = "patient_assignment"
#: Column of salted patient-key hashes in the assignment table.
PATIENT_HASH_COLUMN = "patient_hash"
#: Column of client indices in the assignment table.
CLIENT_COLUMN = "client"


@dataclass(frozen=True)
class PatientAssignment:
    """Where each cohort row went: its patient key, client and split.

    Parameters
    ----------
    patient
        Patient key per row. Held in memory only; never written.
    client
        Client index per row.
    split
        Split name per row (``train``, ``val`` or ``test``).

    """

    patient: np.ndarray
    client: np.ndarray
    split: np.ndarray

    def __post_init__(self) -> None:
        if not len(self.patient) == len(self.client) == len(self.split):
            raise ValueError("patient, client and split must have the same length")


def recompute_assignment(cohort: Cohort, config: DataConfig, seed: int) -> PatientAssignment:
    """Recompute the row → (client, split) assignment that ``build_federation`` makes.

    This repeats the core's steps (:func:`~fedcare_core.data.clients.place_patients`,
    then the per-client seeded split by patient) with the same seed, so it names the same
    places. It is a stop-gap until the core exposes the assignment it used.

    Parameters
    ----------
    cohort
        The cohort given to ``build_federation``.
    config
        The data configuration given to ``build_federation``.
    seed
        The experiment seed given to ``build_federation``.

    Returns
    -------
    PatientAssignment
        One entry per row of the (possibly subsampled) cohort.

    """
    # The core's split helper is private: importing it keeps this copy from drifting.
    from fedcare_core.data.clients import split_patients

    cohort, client = place_patients(cohort, config, seed)
    split = np.full(cohort.n_rows, "", dtype=object)
    for k in range(config.clients):
        rows = np.flatnonzero(client == k)
        for name, pats in split_patients(
            cohort.patient[rows], config, seed, k, cohort.test_patients
        ).items():
            split[rows[np.isin(cohort.patient[rows], pats)]] = name
    return PatientAssignment(patient=np.asarray(cohort.patient), client=client, split=split)


def _new_salt() -> bytes:
    """A fresh random salt for :func:`assignment_table` (16 bytes)."""
    return secrets.token_bytes(16)


def hash_patients(patient: np.ndarray, salt: bytes) -> np.ndarray:
    """Keyed BLAKE2b hash (16 hex digits) of each patient key; equal keys hash equally."""
    uniq, inverse = np.unique(np.asarray(patient).astype(str), return_inverse=True)
    digests = np.array(
        [hashlib.blake2b(str(u).encode(), key=salt, digest_size=8).hexdigest() for u in uniq],
        dtype=object,
    )
    return digests[inverse.reshape(-1)]


def assignment_table(assignment: PatientAssignment, salt: bytes | None = None) -> pd.DataFrame:
    """The distinct (patient hash, client, split) places of the assignment.

    A patient confined to one client and one split has exactly one row, so "patient_hash is
    unique" is the disjointness check; a patient found in two places shows up as a count.

    Parameters
    ----------
    assignment
        Per-row patient key, client and split.
    salt
        Hash key; a fresh random one (:func:`_new_salt`) when omitted, so hashes cannot be
        linked across runs.

    Returns
    -------
    pandas.DataFrame
        Columns ``patient_hash`` (str), ``client`` (int64) and ``split`` (str), de-duplicated.

    """
    key = _new_salt() if salt is None else salt
    table = pd.DataFrame(
        {
            PATIENT_HASH_COLUMN: hash_patients(assignment.patient, key),
            CLIENT_COLUMN: np.asarray(assignment.client, dtype=np.int64),
            SPLIT_COLUMN: np.asarray(assignment.split, dtype=object),
        }
    ).drop_duplicates(ignore_index=True)
    table[PATIENT_HASH_COLUMN] = table[PATIENT_HASH_COLUMN].astype(str)
    table[SPLIT_COLUMN] = table[SPLIT_COLUMN].astype(str)
    return table
