"""What each dataset offers a configuration: feature sets, cohorts, objectives.

Read from the dataset registry (:mod:`fedcare_core.data.registry`), which imports no loader;
tests check the specs agree with the loaders' definitions. :func:`check_dataset_choices` is
:meth:`fedcare_core.config.DataConfig.validate`'s part that depends on the dataset, checked
against the registry as it is when the configuration is validated (a dataset registered later
is a choice too).
"""

from __future__ import annotations

from typing import Protocol

from fedcare_core.data.registry import (
    REGISTRY,
    dataset_names,
    get_dataset,
    is_definition_file,
    registered,
)
from fedcare_core.errors import ConfigError


class DataChoices(Protocol):
    """The fields of :class:`fedcare_core.config.DataConfig` these checks read."""

    @property
    def dataset(self) -> str:
        """``DataConfig.dataset``."""
        ...

    @property
    def clients(self) -> int:
        """``DataConfig.clients``."""
        ...

    @property
    def rho(self) -> float | None:
        """``DataConfig.rho``."""
        ...

    @property
    def objectives_per_client(self) -> int:
        """``DataConfig.objectives_per_client``."""
        ...

    @property
    def cover_all_objectives(self) -> bool:
        """``DataConfig.cover_all_objectives``."""
        ...

    @property
    def features(self) -> str:
        """``DataConfig.features``."""
        ...

    @property
    def cohort(self) -> str | None:
        """``DataConfig.cohort``."""
        ...

    @property
    def benchmark_split(self) -> str | None:
        """``DataConfig.benchmark_split``."""
        ...


#: The datasets registered when the configuration was imported (choices are checked against
#: the registry itself: :func:`check_dataset_choices`).
DATASETS = dataset_names()
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
FEATURE_SETS = tuple(dict.fromkeys(f for s in REGISTRY.values() for f in s.feature_sets))
#: The feature sets each dataset defines.
DATASET_FEATURE_SETS = {name: spec.feature_sets for name, spec in REGISTRY.items()}
#: Cohorts (``--cohort``) each dataset can build (the first is the default; a dataset with one,
#: every row, takes none).
DATASET_COHORTS: dict[str, tuple[str, ...]] = {n: s.cohorts for n, s in REGISTRY.items()}
#: The cohort whose published split ``data.benchmark_split`` reads.
_BENCHMARK_COHORT = "benchmark-ihm"
#: How many objectives each dataset defines.
DATASET_OBJECTIVES = {name: spec.objectives for name, spec in REGISTRY.items()}


def _check_choice(value: str, allowed: tuple[str, ...], name: str, path: str) -> None:
    """Refuse ``value`` outside ``allowed``, naming the field (``path``) and the choices."""
    if value not in allowed:
        raise ConfigError(
            f"unknown {name} {value!r} ({path}); expected one of {', '.join(allowed)}"
        )


def check_dataset_choices(data: DataChoices) -> None:
    """Refuse what ``data.dataset`` does not offer (``data.dataset`` itself already checked).

    Raises
    ------
    ConfigError
        Naming the field and its flag.
    """
    if registered(data.dataset) is None and not is_definition_file(data.dataset):
        raise ConfigError(
            f"unknown dataset {data.dataset!r} (data.dataset); expected one of "
            f"{', '.join(dataset_names())}, or a dataset definition file (FILE.yaml)"
        )
    get_dataset(data.dataset)  # a definition file: read and checked now
    _check_objectives(data)
    _check_features(data)
    _check_cohort(data)


def _check_features(data: DataChoices) -> None:
    _check_choice(data.features, FEATURE_SETS, "feature set", "data.features")
    feature_sets = get_dataset(data.dataset).feature_sets
    if data.features not in feature_sets:
        raise ConfigError(
            f"data.features (--features) {data.features!r} is not defined for {data.dataset}; "
            f"it has {', '.join(feature_sets)} (MIMIC-III's features already come from the "
            "cohort's first-hours window)"
        )
    if data.features != "paper" and data.rho is not None:
        raise ConfigError(
            f"data.rho (--rho) cannot be combined with data.features {data.features!r}: ρ moves "
            "private features into the common set, where an objective predicted earlier would "
            "see features known only later"
        )


def _check_cohort(data: DataChoices) -> None:
    if data.cohort is not None:
        allowed = get_dataset(data.dataset).cohorts
        if not allowed:
            raise ConfigError(
                f"data.cohort (--cohort) {data.cohort!r}: {data.dataset} has no cohorts to "
                "choose from (every encounter is a row); leave it unset"
            )
        _check_choice(data.cohort, allowed, f"{data.dataset} cohort", "data.cohort")
    if data.benchmark_split is not None and data.cohort != _BENCHMARK_COHORT:
        raise ConfigError(
            f"data.benchmark_split (--benchmark-split) reads the MIMIC-III benchmark's "
            f"listfiles: it needs data.cohort {_BENCHMARK_COHORT!r} (--cohort {_BENCHMARK_COHORT})"
        )


def _check_objectives(data: DataChoices) -> None:
    n = get_dataset(data.dataset).objectives
    m = data.objectives_per_client
    if m > n:
        raise ConfigError(
            f"data.objectives_per_client (--objectives-per-client) must be ≤ {n}, the number of "
            f"objectives of {data.dataset}, got {m}"
        )
    if data.cover_all_objectives and data.clients * m < n:
        raise ConfigError(
            f"data.cover_all_objectives: {data.clients} client(s) × {m} objective(s) each "
            f"(--clients × --objectives-per-client) cannot cover the {n} objectives of "
            f"{data.dataset}; give more clients or objectives per client, or set "
            "data.cover_all_objectives false"
        )
