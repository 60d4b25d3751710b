"""The MIMIC-III loader: its extractor's table, read by its definition file.

The extractor (:func:`~fedcare_core.data.mimic3.extract.extract_mimic3`) builds one row per adult
ICU stay from the raw tables; ``fedcare_core/data/definitions/mimic3.yaml`` declares that table
(vocabularies, ranges, availability, the three labels, the paper's partition), and the loader
every dataset defined by a file shares (:func:`~fedcare_core.data.declared.loader.load_declared`)
checks and labels it.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from fedcare_core.data.cohort import Cohort
from fedcare_core.data.declared import DatasetDeclaration, read_definition
from fedcare_core.data.declared.loader import load_declared
from fedcare_core.data.definitions import builtin_definition
from fedcare_core.data.mimic3.cohorts import DEFAULT_COHORT

__all__ = ["load_mimic3", "mimic3_declaration"]


@cache
def mimic3_declaration() -> DatasetDeclaration:
    """The built-in definition of the MIMIC-III stay table (read once)."""
    return read_definition(builtin_definition("mimic3"))


def load_mimic3(
    data_dir: str | Path,
    *,
    chunksize: int = 2_000_000,
    min_age: float = 18.0,
    unseen_categories: str = "refuse",
    cohort: str = DEFAULT_COHORT,
    benchmark_split: str | Path | None = None,
) -> Cohort:
    """Load an adult MIMIC-III ICU-stay cohort with its three objectives.

    Parameters
    ----------
    data_dir
        Directory holding the MIMIC-III v1.4 CSV tables (see
        :func:`~fedcare_core.data.mimic3.extract.extract_mimic3`).
    chunksize, min_age, cohort, benchmark_split
        The extractor's options.
    unseen_categories
        A category outside its feature's declared vocabulary: ``"refuse"`` stops with the
        table, column and rows; ``"other"`` keeps it, encoded in the column's ``other``
        indicator, with a note.

    Returns
    -------
    Cohort
        One row per adult ICU stay: the 46 features, labels ``mortality``, ``readmission`` and
        ``los``, ``patient`` = integer codes of ``SUBJECT_ID`` (in ascending id order),
        ``strata`` = ``admission_location`` (``"UNKNOWN"`` when missing), ``source_sha256`` =
        SHA-256 of the ICUSTAYS file, the benchmark's test patients where a split is given, and
        notes on how the cohort was built.

    Raises
    ------
    DataError
        From the extractor, or a value its definition refuses (file, column and rows named).
    """
    loaded, _ = load_declared(
        mimic3_declaration(),
        Path(data_dir),
        unseen_categories=unseen_categories,
        options={
            "chunksize": chunksize,
            "min_age": min_age,
            "cohort": cohort,
            "benchmark_split": benchmark_split,
        },
    )
    return loaded
