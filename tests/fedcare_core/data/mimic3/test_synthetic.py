"""The synthetic MIMIC-III tables have the real release's column schemas."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from tests.fedcare_core.data.mimic3.synthetic import (
    CHARTEVENTS_COLUMNS,
    ICUSTAYS_COLUMNS,
    LABEVENTS_COLUMNS,
    write_synthetic_mimic3,
)


def test_synthetic_schema_is_full(tmp_path: Path) -> None:
    paths = write_synthetic_mimic3(tmp_path, n_patients=3)
    header = pd.read_csv(paths["CHARTEVENTS"], nrows=0).columns.tolist()
    assert header == list(CHARTEVENTS_COLUMNS)
    assert pd.read_csv(paths["LABEVENTS"], nrows=0).columns.tolist() == list(LABEVENTS_COLUMNS)
    assert pd.read_csv(paths["ICUSTAYS"], nrows=0).columns.tolist() == list(ICUSTAYS_COLUMNS)
