"""A toy dataset: one module (its :class:`DatasetSource`) and one registry line in the test.

Its data is one CSV of :func:`tests.fedcare_core.synthetic.make_cohort`'s encounters
(``toy.csv``: a ``patient`` column, the features and the labels).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fedcare_core.data.cohort import Cohort
from fedcare_core.data.definition import DatasetDefinition
from fedcare_core.data.row_format import RowFormat
from fedcare_core.data.row_values import distinct_keys, feature_rows
from fedcare_core.errors import DataError
from tests.fedcare_core.synthetic import OBJECTIVES, PARTITION, make_cohort

NUMERIC = ("age", "n_meds", "n_labs", "n_proc", "n_inpatient", "n_diag", "weight")
CATEGORICAL = ("sex", "insulin", "adm_type", "specialty")
FILE = "toy.csv"


def write_toy_file(folder: Path, n_patients: int = 300) -> Path:
    """Write ``toy.csv`` into ``folder``: the synthetic cohort's rows."""
    cohort = make_cohort(n_patients)
    table = pd.concat([cohort.features, cohort.labels], axis=1)
    table.insert(0, "patient", cohort.patient)
    folder.mkdir(parents=True, exist_ok=True)
    table.to_csv(folder / FILE, index=False)
    return folder / FILE


class ToySource:
    """Where ``toy.csv`` is, how it loads, what it defines."""

    def locate(self, root: Path | None) -> Path:
        if root is None:
            raise DataError("the toy dataset needs --data-dir")
        return root

    def load(self, data: Any, path: Path, *, verify_checksum: bool) -> tuple[Cohort, str]:
        file = path / FILE if path.is_dir() else path
        if not file.is_file():
            raise DataError(f"{file}: no such file")
        table = pd.read_csv(file, dtype={c: str for c in CATEGORICAL if c != "sex"})
        features = table[list(NUMERIC + CATEGORICAL)].copy()
        for column in ("sex", "insulin"):
            features[column] = pd.Categorical(features[column])
        cohort = Cohort(
            dataset="toy",
            features=features,
            numeric_features=NUMERIC,
            categorical_features=CATEGORICAL,
            labels=table[[o.name for o in OBJECTIVES]],
            objectives=OBJECTIVES,
            patient=table["patient"].to_numpy(),
            strata=table["adm_type"].astype(str),
            source_sha256="0" * 64,
        )
        return cohort, str(file)

    def definition(self, features: str) -> DatasetDefinition:
        return DatasetDefinition(OBJECTIVES, PARTITION, NUMERIC, CATEGORICAL, {})

    def row_format(self) -> RowFormat:
        return RowFormat("toy", (), (), (), (), feature_rows, None)

    def patient_keys(self, path: Path) -> np.ndarray:
        return distinct_keys(pd.read_csv(path / FILE if path.is_dir() else path)["patient"])


SOURCE = ToySource()
