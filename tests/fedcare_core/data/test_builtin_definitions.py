"""The built-in datasets' definition files give the cohorts their Python loaders gave.

Diabetes 130-US read by ``fedcare_core/data/definitions/diabetes130.yaml`` through the loader
every dataset defined by a file takes must be, on the published file, the cohort the Python
loader built before it was replaced by the definition (commit 3091725): the digests below were
recorded from that loader's features, labels (both readmission definitions), patients, strata,
and from the federation it gave (K = 10, seed 0, every client's arrays byte for byte). The
documented definition (both feature sets) must be the one the Python modules declared.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

from fedcare_core.config import DataConfig
from fedcare_core.data.clients import build_federation
from fedcare_core.data.declared import DeclaredSource, read_definition
from fedcare_core.data.declared.loader import load_declared
from fedcare_core.data.definitions import builtin_definition
from fedcare_core.data.diabetes130.definition import (
    DIABETES130_OBJECTIVES,
)
from fedcare_core.data.diabetes130.schema import (
    DIABETES130_CATEGORICAL_FEATURES,
    DIABETES130_NUMERIC_FEATURES,
    DIABETES130_VOCABULARIES,
)

pytestmark = pytest.mark.realdata

#: Recorded from the Python Diabetes 130 loader on the published diabetic_data.csv.
RECORDED = {
    "features": "c8199d6128723c51468f0511589ba887d7b41d0c2d915938635a1eaffbe21a8c",
    "labels 30d": "33b9a5724f6955f06b5d5e064f6e4a226bc5076905cf25fa605fc84f53b36e46",
    "labels any": "a58c47f7ad39501f7843ee756992a037d98da63131aa0cd635a48d5f99e6bf6f",
    "patient": "94d9689895c2bcb1a5a885a358759fdcbb96a6f255f1a4799c09e0af09439934",
    "strata": "644bcd9e50b42aaa1e98795dd5cf49545b0df524b2d1e4cbeea92e4d9587db26",
    "definition": "3532ab15e9828ba16e38201e93f438ce652bc454fe36852600def8f345e28278",
    "federation": "04cb012f0f84b15b6cfd70a867063aa06cc06f45736e77f517fae7fb47eb62b0",
}


def _frame_digest(frame: pd.DataFrame) -> str:
    h = hashlib.sha256()
    h.update(",".join(frame.columns).encode())
    h.update(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes())
    h.update(str(list(frame.dtypes)).encode())
    return h.hexdigest()


@pytest.fixture(scope="module")
def declaration():
    return read_definition(builtin_definition("diabetes130"))


def test_the_definition_gives_the_recorded_cohort(declaration, data_dir: Path) -> None:
    cohort, _ = load_declared(declaration, data_dir)
    assert _frame_digest(cohort.features) == RECORDED["features"]
    assert _frame_digest(cohort.labels) == RECORDED["labels 30d"]
    assert hashlib.sha256(cohort.patient.tobytes()).hexdigest() == RECORDED["patient"]
    assert cohort.strata is not None
    assert _frame_digest(cohort.strata.to_frame()) == RECORDED["strata"]
    assert cohort.objectives == DIABETES130_OBJECTIVES
    assert dict(cohort.vocabularies) == DIABETES130_VOCABULARIES
    assert cohort.numeric_features == DIABETES130_NUMERIC_FEATURES
    assert cohort.categorical_features == DIABETES130_CATEGORICAL_FEATURES
    any_cohort, _ = load_declared(declaration, data_dir, variant="any")
    assert _frame_digest(any_cohort.labels) == RECORDED["labels any"]

    federation = build_federation(
        cohort, DeclaredSource(declaration).partition("paper"), DataConfig(clients=10), 0
    )
    h = hashlib.sha256()
    for client in federation.clients:
        for split in ("train", "val", "test"):
            arrays = client.split(split)
            for a in (arrays.x_common, arrays.x_private, arrays.y):
                h.update(str(a.dtype).encode())
                h.update(str(a.shape).encode())
                h.update(a.tobytes())
    assert h.hexdigest() == RECORDED["federation"]


def test_the_definition_documents_the_recorded_dataset(declaration) -> None:
    """Objectives, both feature sets, availability times and vocabularies, as recorded from the
    Python modules that declared them before the definition file did."""
    source = DeclaredSource(declaration)

    def partition(p) -> dict:
        return {
            "common": list(p.common),
            "private": {k: list(v) for k, v in p.private.items()},
            "private_only": list(p.private_only),
        }

    definition = source.definition("paper")
    doc = {f: partition(source.partition(f)) for f in ("paper", "admission")}
    doc["objectives"] = [[o.name, o.kind, o.description] for o in definition.objectives]
    doc["times"] = {c.name: c.known_at for c in declaration.features}
    doc["predicted"] = {o.objective.name: o.predicted_at for o in declaration.objectives}
    doc["vocabularies"] = {k: list(v) for k, v in definition.vocabularies.items()}
    digest = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()
    assert digest == RECORDED["definition"]
