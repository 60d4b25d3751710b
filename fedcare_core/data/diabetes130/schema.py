"""What ``diabetic_data.csv`` holds, as its definition file declares it.

Every fact here is read from ``fedcare_core/data/definitions/diabetes130.yaml`` (the one
declaration of the dataset): the names below are for the code that refers to Diabetes 130-US
by name (the download, the example rows, tests). The published file
(UCI 296, Strack et al. 2014) has 50 columns; ``?`` marks a missing value, while ``None`` in
``A1Cresult`` and ``max_glu_serum`` is a real category (test not done).
"""

from __future__ import annotations

from typing import cast

from fedcare_core.data.declared.model import Combine, Compare
from fedcare_core.data.diabetes130.loader import diabetes130_declaration

__all__ = [
    "CODE_COLUMNS",
    "COUNT_RANGES",
    "DIABETES130_CATEGORICAL_FEATURES",
    "DIABETES130_COLUMNS",
    "DIABETES130_COUNT_COLUMNS",
    "DIABETES130_CSV_NAME",
    "DIABETES130_CSV_SHA256",
    "DIABETES130_FEATURES",
    "DIABETES130_NUMERIC_FEATURES",
    "DIABETES130_URL",
    "DIABETES130_VOCABULARIES",
    "DIAG_COLUMNS",
    "EXCLUDED_COLUMNS",
    "EXPIRED_DISCHARGE_IDS",
    "HOSPICE_DISCHARGE_IDS",
    "ICD9_GROUPS",
    "ICD9_RANGES",
    "MEDICATION_COLUMNS",
    "MEDICATION_LEVELS",
]

_D = diabetes130_declaration()
_COLUMNS = _D.columns

#: SHA-256 of the published ``diabetic_data.csv`` (not of any archive holding it).
DIABETES130_CSV_SHA256 = cast(str, _D.source.sha256)
#: Official UCI download (dataset 296, CC BY 4.0).
DIABETES130_URL = cast(str, _D.source.url)
#: The CSV's file name, inside a directory or anywhere inside an archive.
DIABETES130_CSV_NAME = _D.source.files[0]

#: The 50 columns of ``diabetic_data.csv``, in file order (the encounter, then the patient).
DIABETES130_COLUMNS: tuple[str, ...] = (cast(str, _D.encounter), _D.patient, *_COLUMNS)
#: Identifiers and label-source columns: never features.
EXCLUDED_COLUMNS: tuple[str, ...] = tuple(
    c for c in DIABETES130_COLUMNS if c not in {f.name for f in _D.features}
)
#: The 46 features, in file order.
DIABETES130_FEATURES: tuple[str, ...] = tuple(c.name for c in _D.features)
#: Numeric features (``age``'s bracket midpoint and the seven counts), in file order.
DIABETES130_NUMERIC_FEATURES: tuple[str, ...] = tuple(c.name for c in _D.features if c.numeric)
#: Categorical features, in file order.
DIABETES130_CATEGORICAL_FEATURES: tuple[str, ...] = tuple(
    c.name for c in _D.features if not c.numeric
)
#: Integer code columns turned into categorical strings.
CODE_COLUMNS: tuple[str, ...] = tuple(c.name for c in _COLUMNS.values() if c.integer_codes)
#: Count columns kept as numeric features.
DIABETES130_COUNT_COLUMNS: tuple[str, ...] = tuple(
    c.name for c in _D.features if c.type == "integer"
)
#: Clinically plausible range of each count, inclusive.
COUNT_RANGES: dict[str, tuple[int, int]] = {
    c: (int(low), int(high))
    for c in DIABETES130_COUNT_COLUMNS
    for low, high in [_COLUMNS[c].range or (0, 0)]
}
#: The three diagnosis columns (grouped into ICD-9 chapters).
DIAG_COLUMNS: tuple[str, ...] = tuple(c.name for c in _COLUMNS.values() if c.groups is not None)
#: The 23 medication columns (values ``No``/``Steady``/``Up``/``Down``).
MEDICATION_LEVELS = ("No", "Steady", "Up", "Down")
MEDICATION_COLUMNS: tuple[str, ...] = tuple(
    c.name for c in _D.features if c.vocabulary == MEDICATION_LEVELS
)
#: The ICD-9 chapter groups of the diagnoses, ``other`` last.
ICD9_GROUPS: tuple[str, ...] = _COLUMNS["diag_1"].feature_vocabulary or ()
#: Each group's inclusive ranges of the code's whole number (the first that matches wins).
ICD9_RANGES: tuple[tuple[str, tuple[tuple[int, int], ...]], ...] = tuple(
    (name, tuple(cast(tuple[int, int], tuple(r)) for r in cast(list[list[int]], ranges)))
    for name, ranges in (_COLUMNS["diag_1"].groups.groups if _COLUMNS["diag_1"].groups else ())
)
#: Declared category lists of the categorical features (``medical_specialty`` has none: a
#: private feature, encoded with each client's own most frequent values).
DIABETES130_VOCABULARIES: dict[str, tuple[str, ...]] = {
    c.name: v for c in _D.features if (v := c.feature_vocabulary) is not None
}


def _discharges(condition: object) -> frozenset[int]:
    """The discharge codes a condition on ``discharge_disposition_id`` names."""
    if isinstance(condition, Combine):
        return frozenset().union(*(_discharges(c) for c in condition.items))
    if isinstance(condition, Compare) and condition.column == "discharge_disposition_id":
        return frozenset(int(v) for v in condition.value)  # type: ignore[attr-defined]
    return frozenset()


#: Discharged expired (the rule refusing an expired encounter marked readmitted names them).
EXPIRED_DISCHARGE_IDS: frozenset[int] = _discharges(_D.rules[0].when)
#: Discharged to hospice (readmission's exclusion, less the expired).
HOSPICE_DISCHARGE_IDS: frozenset[int] = (
    _discharges(next(o.exclude for o in _D.objectives if o.objective.name == "readmission"))
    - EXPIRED_DISCHARGE_IDS
)
