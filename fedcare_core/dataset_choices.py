"""What each dataset offers a configuration: label definitions, feature sets, cohorts, objectives.

Repeated here so the configuration does not import the loaders; tests check they agree.
:func:`check_dataset_choices` is :meth:`fedcare_core.config.DataConfig.validate`'s part that
depends on the dataset.
"""

from __future__ import annotations

from typing import Protocol

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


DATASETS = ("diabetes130", "mimic3")
READMISSION_DEFINITIONS = ("30d", "any")
#: Feature sets (``--features``): the paper's partition, or each objective limited to what is
#: known when it is predicted (Diabetes 130 only; ``DIABETES130_FEATURE_SETS``).
FEATURE_SETS = ("paper", "admission")
#: The feature sets each dataset defines.
DATASET_FEATURE_SETS = {"diabetes130": FEATURE_SETS, "mimic3": ("paper",)}
#: Cohorts (``--cohort``) each dataset can build (``fedcare_core.data.mimic3.cohorts.COHORTS``;
#: the first is the default; Diabetes 130 has one, every encounter, and takes none).
DATASET_COHORTS: dict[str, tuple[str, ...]] = {
    "diabetes130": (),
    "mimic3": ("all-adult-24h", "benchmark-ihm"),
}
#: The cohort whose published split ``data.benchmark_split`` reads.
BENCHMARK_COHORT = "benchmark-ihm"
#: How many objectives each dataset defines (``DIABETES130_OBJECTIVES``, ``MIMIC3_OBJECTIVES``).
DATASET_OBJECTIVES = {"diabetes130": 3, "mimic3": 3}


def check_choice(value: str, allowed: tuple[str, ...], name: str, path: str) -> None:
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
    _check_objectives(data)
    _check_features(data)
    _check_cohort(data)


def _check_features(data: DataChoices) -> None:
    check_choice(data.features, FEATURE_SETS, "feature set", "data.features")
    if data.features not in DATASET_FEATURE_SETS[data.dataset]:
        raise ConfigError(
            f"data.features (--features) {data.features!r} is not defined for {data.dataset}; "
            f"it has {', '.join(DATASET_FEATURE_SETS[data.dataset])} (MIMIC-III's features "
            "already come from the cohort's first-hours window)"
        )
    if data.features != "paper" and data.rho is not None:
        raise ConfigError(
            f"data.rho (--rho) cannot be combined with data.features {data.features!r}: ρ moves "
            "private features into the common set, where an objective predicted earlier would "
            "see features known only later"
        )


def _check_cohort(data: DataChoices) -> None:
    if data.cohort is not None:
        allowed = DATASET_COHORTS[data.dataset]
        if not allowed:
            raise ConfigError(
                f"data.cohort (--cohort) {data.cohort!r}: {data.dataset} has no cohorts to "
                "choose from (every encounter is a row); leave it unset"
            )
        check_choice(data.cohort, allowed, f"{data.dataset} cohort", "data.cohort")
    if data.benchmark_split is not None and data.cohort != BENCHMARK_COHORT:
        raise ConfigError(
            f"data.benchmark_split (--benchmark-split) reads the MIMIC-III benchmark's "
            f"listfiles: it needs data.cohort {BENCHMARK_COHORT!r} (--cohort {BENCHMARK_COHORT})"
        )


def _check_objectives(data: DataChoices) -> None:
    n = DATASET_OBJECTIVES[data.dataset]
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
