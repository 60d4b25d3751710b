"""MIMIC-III as a registered dataset (:mod:`fedcare_core.data.registry`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from fedcare_core.data.cohort import Cohort
    from fedcare_core.data.definition import DatasetDefinition
    from fedcare_core.data.row_format import RowFormat

#: The column that names a patient in ``PATIENTS``.
PATIENT_COLUMN = "SUBJECT_ID"


def _find_mimic_dir(root: Path) -> Path:
    """The MIMIC-III tables' folder: ``root`` itself, or its first sub-folder holding the tables.

    Parameters
    ----------
    root
        The tables' folder, or a datasets root holding e.g. ``mimic3-demo``.

    Returns
    -------
    Path
        The folder with ``ICUSTAYS.csv`` (``root`` when none is found, so the loader names it).
    """

    def holds_tables(folder: Path) -> bool:
        return any(p.name.upper().startswith("ICUSTAYS.CSV") for p in folder.glob("*"))

    if holds_tables(root):
        return root
    for candidate in sorted(root.iterdir()) if root.is_dir() else []:
        if candidate.is_dir() and holds_tables(candidate):
            return candidate
    return root


class _Mimic3Source:
    """Where the MIMIC-III tables are, how they load, what they define."""

    def locate(self, root: Path | None) -> Path:
        """The tables' folder under ``root`` (credentialed data: there is no download)."""
        from fedcare_core.errors import DataError

        if root is None:
            raise DataError(
                "MIMIC-III is credentialed data: pass --data-dir (a flow: data_dir) pointing at "
                "the raw CSV tables"
            )
        return _find_mimic_dir(Path(root))

    def load(self, data: Any, path: Path, *, verify_checksum: bool) -> tuple[Cohort, str]:
        """The cohort ``data.cohort`` built from the tables in ``path``, and that folder."""
        from fedcare_core.data.mimic3 import load_mimic3
        from fedcare_core.data.mimic3.cohorts import DEFAULT_COHORT

        cohort = load_mimic3(
            path,
            unseen_categories=data.unseen_categories,
            cohort=data.cohort or DEFAULT_COHORT,
            benchmark_split=data.benchmark_split,
        )
        return cohort, str(path)

    def definition(self, features: str) -> DatasetDefinition:
        """Its objectives, partition, features and vocabularies (one feature set: the paper's)."""
        from fedcare_core.data import mimic3 as m
        from fedcare_core.data.definition import DatasetDefinition
        from fedcare_core.errors import ConfigError

        if features != "paper":
            raise ConfigError(f"feature set {features!r} is not defined for mimic3")
        return DatasetDefinition(
            m.MIMIC3_OBJECTIVES,
            m.MIMIC3_PARTITION,
            m.NUMERIC_FEATURES,
            m.CATEGORICAL_FEATURES,
            m.MIMIC3_VOCABULARIES,
        )

    def row_format(self) -> RowFormat:
        """One row per ICU stay holding the cohort's features."""
        from fedcare_core.data.mimic3 import rows as m
        from fedcare_core.data.row_format import RowFormat

        return RowFormat(
            "mimic3",
            m.ROW_COLUMNS,
            (),
            m.IDENTIFIER_COLUMNS,
            m.LABEL_COLUMNS,
            m.features_from_rows,
            m.example_rows,
        )

    def patient_keys(self, path: Path) -> np.ndarray:
        """The distinct ``SUBJECT_ID`` values of ``PATIENTS``."""
        from fedcare_core.data.mimic3.reader import find_table, read_small
        from fedcare_core.data.mimic3.schema import PATIENTS
        from fedcare_core.data.row_values import distinct_keys
        from fedcare_core.errors import DataError

        table = find_table(Path(path), "PATIENTS", required=True)
        if table is None:  # required=True raises first
            raise DataError(f"{path}: no PATIENTS table")
        column = read_small(table, PATIENTS, 2_000_000)[PATIENT_COLUMN]
        return distinct_keys(column.dropna().astype("int64"))  # read as float: 1000.0 is 1000


SOURCE = _Mimic3Source()
