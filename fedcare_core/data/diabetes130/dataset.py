"""Diabetes 130-US as a registered dataset (:mod:`fedcare_core.data.registry`).

Its definition file (``fedcare_core/data/definitions/diabetes130.yaml``) says everything: the
loader, the documented definition, the row format and the patient keys are those of every
dataset defined by a file (:class:`~fedcare_core.data.declared.DeclaredSource`). Only where the
file is when no folder is given (the download cache) and the synthetic example rows are its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from fedcare_core.data.declared import DeclaredSource
from fedcare_core.data.diabetes130.loader import diabetes130_declaration

if TYPE_CHECKING:
    import pandas as pd

    from fedcare_core.data.row_format import RowFormat

#: The column that names a patient in ``diabetic_data.csv``.
PATIENT_COLUMN = "patient_nbr"


class _Diabetes130Source(DeclaredSource):
    """``diabetic_data.csv`` by its definition; the download cache when no folder is given."""

    def __init__(self) -> None:
        super().__init__(diabetes130_declaration())

    def locate(self, root: Path | None) -> Path:
        """``root``, else the download cache (``fedcare data fetch diabetes130``).

        Raises
        ------
        DataError
            No ``root`` and no file in the cache (never downloaded, or a download that did not
            finish): one line naming ``--data-dir``, ``FEDCARE_DATA_DIR`` and ``fedcare data
            fetch``.
        """
        from fedcare_core.data.diabetes130.source import find_diabetes130
        from fedcare_core.data.fetch import default_cache_dir
        from fedcare_core.data.paths import no_data_message
        from fedcare_core.errors import DataError

        if root is not None:
            return root
        cached = default_cache_dir() / "diabetes130"
        try:
            find_diabetes130(cached)  # the verified CSV, or an archive holding it
        except DataError:
            raise DataError(no_data_message("diabetes130", fetch_into=cached)) from None
        return cached

    def row_format(self) -> RowFormat:
        """One encounter in the columns of ``diabetic_data.csv``."""
        import dataclasses

        return dataclasses.replace(super().row_format(), example=example_rows)


def example_rows() -> pd.DataFrame:
    """Two synthetic rows to score (never a real encounter): an input example for a model."""
    import pandas as pd

    from fedcare_core.data.diabetes130.schema import (
        DIABETES130_FEATURES,
        DIABETES130_VOCABULARIES,
        MEDICATION_COLUMNS,
    )

    first: dict[str, object] = {c: DIABETES130_VOCABULARIES[c][0] for c in ("race", "gender")}
    first |= {
        "age": "[70-80)",
        "weight": "?",
        "admission_type_id": 1,
        "discharge_disposition_id": 1,
        "admission_source_id": 7,
        "payer_code": "?",
        "medical_specialty": "?",
        "num_lab_procedures": 40,
        "num_procedures": 1,
        "num_medications": 15,
        "number_outpatient": 0,
        "number_emergency": 0,
        "number_inpatient": 0,
        "diag_1": "428",
        "diag_2": "250.01",
        "diag_3": "V45",
        "number_diagnoses": 7,
        "max_glu_serum": "None",
        "A1Cresult": ">7",
        "change": "No",
        "diabetesMed": "Yes",
    }
    first |= {c: "No" for c in MEDICATION_COLUMNS}
    second = first | {
        "gender": "Male",
        "age": "[50-60)",
        "num_lab_procedures": 60,
        "num_medications": 22,
        "number_inpatient": 2,
        "metformin": "Steady",
        "insulin": "Up",
        "change": "Ch",
    }
    return pd.DataFrame([first, second], columns=list(DIABETES130_FEATURES))


SOURCE = _Diabetes130Source()
