"""Diabetes 130-US as a registered dataset (:mod:`fedcare_core.data.registry`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from fedcare_core.data.cohort import Cohort
    from fedcare_core.data.definition import DatasetDefinition
    from fedcare_core.data.row_format import RowFormat

#: The column that names a patient in ``diabetic_data.csv``.
PATIENT_COLUMN = "patient_nbr"


class _Diabetes130Source:
    """Where ``diabetic_data.csv`` is, how it loads, what it defines."""

    def locate(self, root: Path | None) -> Path:
        """``root``, else the download cache (``fedcare data fetch diabetes130``)."""
        from fedcare_core.data.fetch import default_cache_dir
        from fedcare_core.errors import DataError

        if root is not None:
            return root
        cached = default_cache_dir() / "diabetes130"
        if not cached.is_dir():
            raise DataError(
                "no data directory given: pass --data-dir (a flow: data_dir), set "
                "FEDCARE_DATA_DIR, or run 'fedcare data fetch diabetes130'"
            )
        return cached

    def load(self, data: Any, path: Path, *, verify_checksum: bool) -> tuple[Cohort, str]:
        """The cohort of ``diabetic_data.csv`` found under ``path``, and the file read."""
        from fedcare_core.data.diabetes130 import find_diabetes130, load_diabetes130

        found = find_diabetes130(path)
        cohort = load_diabetes130(
            found,
            readmission=data.readmission,
            verify_checksum=verify_checksum,
            unseen_categories=data.unseen_categories,
        )
        return cohort, str(found)

    def definition(self, features: str) -> DatasetDefinition:
        """Its objectives, the partition of feature set ``features``, features and vocabularies."""
        from fedcare_core.data import diabetes130 as d
        from fedcare_core.data.definition import DatasetDefinition

        return DatasetDefinition(
            d.DIABETES130_OBJECTIVES,
            d.DIABETES130_FEATURE_SETS[features],
            d.DIABETES130_NUMERIC_FEATURES,
            d.DIABETES130_CATEGORICAL_FEATURES,
            d.DIABETES130_VOCABULARIES,
        )

    def row_format(self) -> RowFormat:
        """One encounter in the columns of ``diabetic_data.csv``."""
        from fedcare_core.data.diabetes130 import rows as d
        from fedcare_core.data.row_format import RowFormat

        return RowFormat(
            "diabetes130",
            d.ROW_COLUMNS,
            d.INTEGER_COLUMNS,
            d.IDENTIFIER_COLUMNS,
            d.LABEL_COLUMNS,
            d.features_from_rows,
            d.example_rows,
        )

    def patient_keys(self, path: Path) -> np.ndarray:
        """The file's distinct ``patient_nbr`` values, as written."""
        from fedcare_core.data.diabetes130.reading import read_table
        from fedcare_core.data.diabetes130.source import find_diabetes130, read_source
        from fedcare_core.data.patient_keys import distinct_keys

        table, _, _ = read_table(*read_source(find_diabetes130(path)))
        return distinct_keys(table[PATIENT_COLUMN])


SOURCE = _Diabetes130Source()
