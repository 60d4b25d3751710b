"""The built-in datasets' definition files against their Python loaders, on the real files.

Diabetes 130-US read by ``fedcare_core/data/definitions/diabetes130.yaml`` through the loader
every dataset defined by a file takes must be the cohort the Python loader builds: the same
features, labels (both readmission definitions), patients, strata, vocabularies, objectives and
source digest, the same documented definition (both feature sets), and byte-identical
federations.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedcare_core.config import DataConfig
from fedcare_core.data.clients import build_federation
from fedcare_core.data.declared import DeclaredSource, read_definition
from fedcare_core.data.declared.loader import load_declared
from fedcare_core.data.definitions import builtin_definition
from fedcare_core.data.diabetes130 import load_diabetes130
from fedcare_core.data.loading import dataset_definition

pytestmark = pytest.mark.realdata


@pytest.fixture(scope="module")
def diabetes(data_dir: Path) -> tuple:
    declaration = read_definition(builtin_definition("diabetes130"))
    cohort, _ = load_declared(declaration, data_dir)
    return load_diabetes130(data_dir), cohort, declaration


def test_the_definition_gives_the_python_loaders_cohort(diabetes: tuple, data_dir: Path) -> None:
    python, declared, declaration = diabetes
    pd.testing.assert_frame_equal(python.features, declared.features)
    pd.testing.assert_frame_equal(python.labels, declared.labels)
    assert np.array_equal(python.patient, declared.patient)
    assert python.strata is not None and declared.strata is not None
    assert python.strata.tolist() == declared.strata.tolist()
    assert (python.numeric_features, python.categorical_features) == (
        declared.numeric_features,
        declared.categorical_features,
    )
    assert dict(python.vocabularies) == dict(declared.vocabularies)
    assert python.objectives == declared.objectives
    assert python.source_sha256 == declared.source_sha256
    any_python = load_diabetes130(data_dir, readmission="any")
    any_declared, _ = load_declared(declaration, data_dir, variant="any")
    pd.testing.assert_frame_equal(any_python.labels, any_declared.labels)


@pytest.mark.parametrize("features", ["paper", "admission"])
def test_the_definition_documents_the_same_dataset(diabetes: tuple, features: str) -> None:
    _, _, declaration = diabetes
    assert DeclaredSource(declaration).definition(features) == dataset_definition(
        "diabetes130", features
    )


def test_the_federations_are_byte_identical(diabetes: tuple) -> None:
    python, declared, declaration = diabetes
    config = DataConfig(clients=10)
    partition = DeclaredSource(declaration).partition("paper")
    a = build_federation(python, dataset_definition("diabetes130").partition, config, 0)
    b = build_federation(declared, partition, config, 0)
    assert a.objectives == b.objectives and a.common_width == b.common_width
    for x, y in zip(a.clients, b.clients, strict=True):
        assert x.objectives == y.objectives and x.private_features == y.private_features
        for split in ("train", "val", "test"):
            for field in ("x_common", "x_private", "y"):
                left, right = getattr(x.split(split), field), getattr(y.split(split), field)
                assert left.dtype == right.dtype and left.tobytes() == right.tobytes()
