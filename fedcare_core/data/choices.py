"""Whether a dataset offers what a configuration asks of it: feature set, cohort, objectives.

The configuration checks each setting alone (:meth:`fedcare_core.config.DataConfig.validate`);
what depends on the dataset, a built-in one or one defined by a file, is checked here, by
:func:`fedcare_core.algorithms.validate_config` (every entry, before any work) and by the loader
(:func:`fedcare_core.data.loading.load_dataset`).
"""

from __future__ import annotations

from typing import Protocol

from fedcare_core.data.registry import dataset_names, get_dataset, is_definition_file, registered
from fedcare_core.errors import ConfigError

#: The cohort whose published split ``data.benchmark_split`` reads.
_BENCHMARK_COHORT = "benchmark-ihm"


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
    every = tuple(dict.fromkeys(f for n in dataset_names() for f in get_dataset(n).feature_sets))
    _check_choice(data.features, every, "feature set", "data.features")
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
