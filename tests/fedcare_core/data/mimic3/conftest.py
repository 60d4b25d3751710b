"""Synthetic MIMIC-III tables and cohorts shared by the loader's tests."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from fedcare_core.data.cohort import Cohort
from fedcare_core.data.mimic3 import load_mimic3
from tests.fedcare_core.data.mimic3.synthetic import synthetic_mimic3_tables, write_synthetic_mimic3


@pytest.fixture(scope="package")
def synth_tables() -> dict[str, pd.DataFrame]:
    return synthetic_mimic3_tables(n_patients=30, seed=0)


@pytest.fixture(scope="package")
def synth_cohort(tmp_path_factory: pytest.TempPathFactory) -> Cohort:
    d = tmp_path_factory.mktemp("mimic_upper")
    write_synthetic_mimic3(d, n_patients=30, seed=0)
    return load_mimic3(d)


@pytest.fixture
def synth_dir(tmp_path: Path) -> Path:
    write_synthetic_mimic3(tmp_path, n_patients=4, seed=5)
    return tmp_path
