"""The built-in datasets' definition files give the cohorts their Python loaders gave.

Diabetes 130-US read by ``fedcare_core/data/definitions/diabetes130.yaml`` through the loader
every dataset defined by a file takes must be, on the published file, the cohort the Python
loader built before it was replaced by the definition (commit 3091725): the digests below were
recorded from that loader's features, labels (both readmission definitions), patients, strata,
and from the federation it gave (K = 10, seed 0, every client's arrays byte for byte). The
documented definition (both feature sets) must be the one the Python modules declared.

MIMIC-III, its extractor's table read by ``fedcare_core/data/definitions/mimic3.yaml``, must be
on the demo the cohort its Python loader built before (commit 153277d; both cohorts, K = 3:
the demo's 100 patients leave a client of ten without a readmission).
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
    any_cohort, _ = load_declared(declaration, data_dir, variants=("any", "los", "deaths"))
    assert _frame_digest(any_cohort.labels) == RECORDED["labels any"]

    federation = build_federation(
        cohort, DeclaredSource(declaration).partition("paper"), DataConfig(clients=10), 0
    )
    assert _federation_digest(federation) == RECORDED["federation"]


#: Recorded from the Python MIMIC-III loader (commit 153277d) on the demo.
RECORDED_MIMIC3 = {
    "all-adult-24h": {
        "features": "4f672addd6db9abf797304e2973298357b777aca7b3cdf16311de78a79e98bb5",
        "labels": "c30d83f79a87e454764d252e4ce0928c3374b9b59e86a9a388168d94b2d575eb",
        "patient": "77404689fe59bb70368f7c14b1931541707204051a1bd3e0ded466aba5b3b425",
        "strata": "b5735220dbe329af378e590bd1a4167324fb8ee88fcadcff5bbc0335a7648f17",
        "federation": "6cdf3085d59dfe18da00443f7a831558265f4c41923f0c3f59cc24f75ef17fc8",
    },
    "benchmark-ihm": {
        "features": "4607ce6598019b98ffeb9fd920341b2acc2fb97325c8f5dacb732e4e01fef8b7",
        "labels": "548b364a216ecc8304b6a41dd28318d81e24a94c45b231eaf20df168ed4e5685",
        "patient": "6fc80d79dd4cff89855adb30f02be4f60361d9489708f68b249f1df49ae6c819",
        "strata": "c0b5aeddd945e0edbcde70aae8e3c5508f8fe090e3f1863e4a50eb095d2158d6",
        "federation": "154db9b7b8b9270739ee0dc8e95dc93f3cdef70d4eca1f3a7b26268dfe347c67",
    },
}


def _federation_digest(federation) -> str:
    h = hashlib.sha256()
    for client in federation.clients:
        for split in ("train", "val", "test"):
            arrays = client.split(split)
            for a in (arrays.x_common, arrays.x_private, arrays.y):
                h.update(str(a.dtype).encode())
                h.update(str(a.shape).encode())
                h.update(a.tobytes())
    return h.hexdigest()


@pytest.mark.parametrize("cohort_name", sorted(RECORDED_MIMIC3))
def test_the_mimic3_definition_gives_the_recorded_cohort(cohort_name: str, data_dir: Path) -> None:
    from fedcare_core.data.mimic3 import MIMIC3_PARTITION, load_mimic3

    demo = data_dir / "mimic3-demo"
    if not demo.is_dir():
        pytest.skip("the MIMIC-III demo is not in the data folder")
    cohort = load_mimic3(demo, cohort=cohort_name)
    recorded = RECORDED_MIMIC3[cohort_name]
    assert cohort.strata is not None
    got = {
        "features": _frame_digest(cohort.features),
        "labels": _frame_digest(cohort.labels),
        "patient": hashlib.sha256(cohort.patient.tobytes()).hexdigest(),
        "strata": hashlib.sha256("|".join(cohort.strata).encode()).hexdigest(),
        "federation": _federation_digest(
            build_federation(cohort, MIMIC3_PARTITION, DataConfig(clients=3), 0)
        ),
    }
    assert got == recorded


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
