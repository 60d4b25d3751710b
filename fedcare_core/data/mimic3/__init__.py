"""MIMIC-III v1.4 loader: the adult ICU-stay cohort with three objectives.

The loader reads the raw MIMIC-III CSV tables (``ADMISSIONS``, ``PATIENTS``, ``ICUSTAYS``,
``LABEVENTS`` and, when present, ``CHARTEVENTS``), builds one row per adult ICU stay and derives
three objectives:

* ``mortality`` (binary): ``ADMISSIONS.HOSPITAL_EXPIRE_FLAG`` of the admission holding the stay;
* ``readmission`` (binary): the same subject has another hospital admission whose ``ADMITTIME``
  falls in ``[DISCHTIME, DISCHTIME + 30 days]`` of this admission; NaN when the patient died in
  this admission (only survivors can be readmitted);
* ``los`` (regression): ``ICUSTAYS.LOS`` in days; NaN when missing or not positive.

Features use only what is known in the first 24 hours of the ICU stay: demographics, admission
fields, the first care unit, lab aggregates (``LABEVENTS`` rows of the stay's admission charted in
``[INTIME, INTIME + 24 h]``) and vital-sign aggregates (``CHARTEVENTS`` rows of the stay in the same
window). Discharge-time fields (``DISCHARGE_LOCATION``, ``DEATHTIME``, ``DIAGNOSIS``, ICD codes,
``LOS``, ``OUTTIME``, ``LAST_CAREUNIT``) are never read as features.

``LABEVENTS`` and ``CHARTEVENTS`` are streamed in chunks; each chunk is filtered at once to the
item ids used, to the cohort's admissions or stays and to the first-24 h window, so the full
``CHARTEVENTS`` (about 33 GB) is never held in memory. The retained rows are aggregated once, after
the last chunk, in file order, so the result does not depend on ``chunksize``.

Dates are read as text and parsed by the loader: ISO ``YYYY-MM-DD HH:MM[:SS]`` (the MIMIC-III
release format) is parsed directly; ``M/D/YY H:MM`` values, which a spreadsheet round trip leaves
behind (the bundled demo's ``ADMISSIONS`` and ``PATIENTS`` are written that way), get their century
back from the ICU stays' full ``INTIME`` (see :func:`~fedcare_core.data.mimic3.dates.parse_times`).

The package is split by concern: :mod:`.schema` (the tables and columns read), :mod:`.reader`
(finding and streaming the CSV files), :mod:`.dates` (date parsing and two-digit-year repair),
:mod:`.items` and :mod:`.features` (the measured items and the 46 features), :mod:`.stays`,
:mod:`.labels`, :mod:`.categories` and :mod:`.events` (the cohort's rows, the next admission,
static features and first-24 h aggregates), :mod:`.extract` (:func:`extract_mimic3`, which
wires them together into one row per stay) and :mod:`.loader` (:func:`load_mimic3`: that table
read by its definition file, ``fedcare_core/data/definitions/mimic3.yaml``, which declares the
vocabularies, ranges, labels and partition; :mod:`.definition` names them for code).
"""

from fedcare_core.data.mimic3.definition import (
    MIMIC3_OBJECTIVES,
    MIMIC3_PARTITION,
    MIMIC3_VOCABULARIES,
)
from fedcare_core.data.mimic3.features import (
    AGE_90_PLUS,
    CATEGORICAL_FEATURES,
    FEATURE_WINDOW,
    MIMIC3_FEATURES,
    NUMERIC_FEATURES,
)
from fedcare_core.data.mimic3.loader import load_mimic3
from fedcare_core.data.mimic3.schema import MIMIC3_REQUIRED_COLUMNS

__all__ = [
    "AGE_90_PLUS",
    "CATEGORICAL_FEATURES",
    "FEATURE_WINDOW",
    "MIMIC3_FEATURES",
    "MIMIC3_OBJECTIVES",
    "MIMIC3_PARTITION",
    "MIMIC3_REQUIRED_COLUMNS",
    "MIMIC3_VOCABULARIES",
    "NUMERIC_FEATURES",
    "load_mimic3",
]
