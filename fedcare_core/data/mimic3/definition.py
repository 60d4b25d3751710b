"""The MIMIC-III cohort's objectives, partition and vocabularies, as its definition declares.

Read from ``fedcare_core/data/definitions/mimic3.yaml`` (its comments say why each feature sits
where it does): the names below are for code and tests that refer to them.
"""

from __future__ import annotations

from fedcare_core.data.cohort import Objective
from fedcare_core.data.mimic3.loader import mimic3_declaration
from fedcare_core.data.partition import FeaturePartition

__all__ = ["MIMIC3_OBJECTIVES", "MIMIC3_PARTITION", "MIMIC3_VOCABULARIES"]

_D = mimic3_declaration()

#: The three objectives, in label-column order.
MIMIC3_OBJECTIVES: tuple[Objective, ...] = tuple(o.objective for o in _D.objectives)
#: The paper's partition (§V-D): 19 common features and 9 private ones per objective.
MIMIC3_PARTITION: FeaturePartition = _D.partition
#: The categorical features' documented vocabularies (MIMIC-III v1.4 ADMISSIONS, PATIENTS,
#: ICUSTAYS): every client encodes a shared feature the same way without seeing others' rows.
MIMIC3_VOCABULARIES: dict[str, tuple[str, ...]] = {
    c.name: v for c in _D.features if (v := c.feature_vocabulary) is not None
}
