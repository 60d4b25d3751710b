"""The MIMIC-III benchmark's own train/test split, read from its listfiles.

The benchmark (YerevaNN/mimic3-benchmarks) splits by patient and writes each task's stays to
``<task>/train/listfile.csv`` and ``<task>/test/listfile.csv``, one row per stay,
``stay,y_true`` with ``stay = "<SUBJECT_ID>_episode<k>_timeseries.csv"``. Given the task's
folder, :func:`read_benchmark_split` returns which subjects are in each part; the loader keeps
the cohort stays of listed subjects and fixes the listed test subjects' stays to every
client's test split, so a credentialed user reproduces the benchmark's test set (each client's
train and validation patients are then drawn from its other patients). No identifier leaves
this module: messages name the file, the column and the rows, never a value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from fedcare_core.errors import DataError

__all__ = ["BenchmarkSplit", "read_benchmark_split"]

_STAY = re.compile(r"^(\d+)_episode(\d+)_timeseries\.csv$")
#: The listfiles of a task folder, by part.
_PARTS = ("train", "test")


@dataclass(frozen=True)
class BenchmarkSplit:
    """The subjects of each part of the benchmark's split."""

    train: frozenset[int]
    test: frozenset[int]

    def part_of(self, subjects: np.ndarray) -> np.ndarray:
        """``"train"``, ``"test"`` or ``""`` (not listed) for each subject."""
        out = np.full(len(subjects), "", dtype=object)
        out[np.isin(subjects, list(self.train))] = "train"
        out[np.isin(subjects, list(self.test))] = "test"
        return out

    def unmatched_note(self, cohort: np.ndarray, tables: np.ndarray) -> str | None:
        """The listed subjects without a stay in the cohort, counted (None: there are none).

        Parameters
        ----------
        cohort
            The subject of each stay of the cohort.
        tables
            The subject of each stay of the tables (before the cohort's rules).

        Returns
        -------
        str or None
            How many listed subjects (train, test) have no stay in the cohort: absent from
            the tables, or there but left out by the cohort's rules; counts only.
        """
        kept = {int(s) for s in np.unique(cohort)}
        present = {int(s) for s in np.unique(tables)}
        listed = self.train | self.test
        missing = listed - kept
        if not missing:
            return None
        absent = len(missing - present)
        in_test = len(missing & self.test)
        note = (
            f"benchmark split: listed subjects without a stay in this cohort: {len(missing):,} "
            f"of {len(listed):,} ({len(missing) - in_test:,} train, {in_test:,} test); "
            f"{absent:,} not in the tables, {len(missing) - absent:,} left out by its rules"
        )
        return note + ("; the benchmark's test set is reproduced only in part" if in_test else "")


def _subjects(path: Path) -> frozenset[int]:
    if not path.is_file():
        raise DataError("benchmark listfile not found", file=str(path))
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        what = type(exc).__name__
        raise DataError(f"benchmark listfile unreadable ({what})", file=str(path)) from None
    if "stay" not in frame.columns:
        raise DataError("benchmark listfile has no 'stay' column", file=str(path), column="stay")
    matches = frame["stay"].str.strip().str.extract(_STAY)
    bad = matches[0].isna().to_numpy()
    if bad.any():
        raise DataError(
            "stay must read <SUBJECT_ID>_episode<k>_timeseries.csv",
            file=str(path),
            column="stay",
            rows=(np.flatnonzero(bad) + 1).tolist(),
        )
    return frozenset(int(s) for s in matches[0])


def read_benchmark_split(task_dir: str | Path) -> BenchmarkSplit:
    """Read ``train/listfile.csv`` and ``test/listfile.csv`` of the benchmark task folder.

    Raises
    ------
    DataError
        If a listfile is missing or unreadable, lacks the ``stay`` column or holds a malformed
        stay (rows named), or a subject is listed in both parts.
    """
    root = Path(task_dir)
    train, test = (_subjects(root / part / "listfile.csv") for part in _PARTS)
    both = train & test
    if both:
        raise DataError(
            f"{len(both)} subject(s) listed in both the train and the test listfile; the "
            "benchmark splits by patient",
            file=str(root / "test" / "listfile.csv"),
            column="stay",
        )
    return BenchmarkSplit(train, test)
