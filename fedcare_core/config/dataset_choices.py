"""What each dataset offers a configuration: feature sets, cohorts, objectives.

Read from the installed datasets (``fedcare.datasets`` entry points, :mod:`fedcare_core.plugins`)
when the configuration is imported: the feature-set and cohort settings offer every dataset's.
Which of them a given dataset offers is checked where datasets are known,
:func:`fedcare_core.data.choices.check_dataset_choices` (by
:func:`fedcare_core.algorithms.validate_config` and by the loader), since a dataset may also be
defined by a file.
"""

from __future__ import annotations

from typing import Any

from fedcare_core.plugins import entry_names, load_entry


def _installed() -> dict[str, Any]:
    """The installed datasets' specs (each a ``DatasetSpec``), by name."""
    return {name: load_entry("dataset", name) for name in entry_names("dataset")}


_SPECS = _installed()
#: The datasets installed when the configuration was imported.
DATASETS = tuple(_SPECS)
#: ``--readmission``: within 30 days (the default label), or any readmission (variant ``any``).
READMISSION_DEFINITIONS = ("30d", "any")
#: ``--early-discharge``: the paper's ``time_in_hospital <= 3`` (the default label, ``los``),
#: discharged home alive within 3 days among those discharged home (variant ``home``), or
#: against every other encounter (variant ``home-or-not``).
EARLY_DISCHARGE_DEFINITIONS = ("los", "home", "home-or-not")
#: ``--readmission-exclude``: expired and hospice discharges (the default exclusion,
#: ``deaths``), or also discharges against medical advice and transfers to another acute
#: hospital (variant ``deaths-ama-transfers``).
READMISSION_EXCLUSIONS = ("deaths", "deaths-ama-transfers")
#: Every feature set some dataset defines (``--features``): the paper's partition, or each
#: objective limited to what is known when it is predicted.
FEATURE_SETS = tuple(dict.fromkeys(f for s in _SPECS.values() for f in s.feature_sets))
#: The feature sets each dataset defines.
DATASET_FEATURE_SETS = {name: spec.feature_sets for name, spec in _SPECS.items()}
#: Cohorts (``--cohort``) each dataset can build (the first is the default; a dataset with one,
#: every row, takes none).
DATASET_COHORTS: dict[str, tuple[str, ...]] = {n: s.cohorts for n, s in _SPECS.items()}
#: How many objectives each dataset defines.
DATASET_OBJECTIVES = {name: spec.objectives for name, spec in _SPECS.items()}
