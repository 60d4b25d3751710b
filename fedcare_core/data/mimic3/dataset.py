"""MIMIC-III as a registered dataset (:mod:`fedcare_core.data.registry`).

Its definition file (``fedcare_core/data/definitions/mimic3.yaml``) declares the table the
MIMIC-III extractor builds: the loader, the documented definition and the row format are those of
every dataset defined by a file (:class:`~fedcare_core.data.declared.DeclaredSource`). Only where
the raw tables are and where their patients are listed are its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from fedcare_core.data.declared import DeclaredSource
from fedcare_core.data.mimic3.loader import mimic3_declaration

if TYPE_CHECKING:
    import numpy as np


#: The column that names a patient in ``PATIENTS``.
PATIENT_COLUMN = "SUBJECT_ID"


class _Mimic3Source(DeclaredSource):
    """The MIMIC-III stay table by its definition; its raw tables' folder and patients."""

    def __init__(self) -> None:
        super().__init__(mimic3_declaration())

    def locate(self, root: Path | None) -> Path:
        """The tables' folder under ``root`` (credentialed data: there is no download)."""
        from fedcare_core.errors import DataError

        if root is None:
            from fedcare_core.data.paths import no_data_message

            raise DataError(
                f"{no_data_message('mimic3')}, naming the folder of its raw CSV tables "
                "(MIMIC-III is credentialed data: there is no download)"
            )
        from fedcare_core.data.mimic3.extract import find_tables_folder

        return find_tables_folder(Path(root))

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
