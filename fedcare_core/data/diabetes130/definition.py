"""The Diabetes 130-US cohort's objectives and feature partitions, as its definition declares.

Read from ``fedcare_core/data/definitions/diabetes130.yaml`` (its comments say why each feature
sits where it does, and when it is known): the names below are for code and tests that refer
to them.
"""

from __future__ import annotations

from fedcare_core.data.cohort import Objective
from fedcare_core.data.declared.model import Compare
from fedcare_core.data.declared.source import DeclaredSource
from fedcare_core.data.diabetes130.loader import diabetes130_declaration
from fedcare_core.data.partition import FeaturePartition

__all__ = [
    "DIABETES130_ADMISSION_PARTITION",
    "DIABETES130_FEATURE_SETS",
    "DIABETES130_FEATURE_TIMES",
    "DIABETES130_OBJECTIVES",
    "DIABETES130_PARTITION",
    "DIABETES130_PREDICTION_TIMES",
    "EARLY_DISCHARGE_MAX_DAYS",
]

_D = diabetes130_declaration()
_SOURCE = DeclaredSource(_D)

DIABETES130_OBJECTIVES: tuple[Objective, ...] = tuple(o.objective for o in _D.objectives)
#: The paper's partition (Definition 3, §V-D): 20 common features, pools of 9 / 9 / 8.
DIABETES130_PARTITION: FeaturePartition = _D.partition
#: When each feature's value is known (admission, stay, discharge).
DIABETES130_FEATURE_TIMES: dict[str, str] = {c.name: str(c.known_at) for c in _D.features}
#: When each objective is predicted.
DIABETES130_PREDICTION_TIMES: dict[str, str] = {
    o.objective.name: o.predicted_at for o in _D.objectives
}
#: ``--features admission``: each objective sees only what is known when it is predicted.
DIABETES130_ADMISSION_PARTITION: FeaturePartition = _SOURCE.partition("admission")
#: ``--features`` → partition.
DIABETES130_FEATURE_SETS: dict[str, FeaturePartition] = {
    "paper": DIABETES130_PARTITION,
    "admission": DIABETES130_ADMISSION_PARTITION,
}
_EARLY = next(o.label for o in _D.objectives if o.objective.name == "early_discharge")
#: Early discharge threshold: a stay of at most this many days.
EARLY_DISCHARGE_MAX_DAYS = int(_EARLY.value) if isinstance(_EARLY, Compare) else 0  # type: ignore[call-overload]
