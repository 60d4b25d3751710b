"""Dataset registry: name → loader and default feature partition."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from fedcare_core.config import DataConfig
from fedcare_core.data.cohort import Cohort, Objective
from fedcare_core.data.partition import FeaturePartition
from fedcare_core.errors import ConfigError, DataError


@dataclass(frozen=True)
class LoadedDataset:
    """A cohort, its default partition and the file it came from (for messages)."""

    cohort: Cohort
    partition: FeaturePartition
    source: str


def load_dataset(
    config: DataConfig, data_dir: str | Path | None, *, verify_checksum: bool = True
) -> LoadedDataset:
    """Load ``config.dataset`` from ``data_dir`` (or ``FEDCARE_DATA_DIR``).

    Parameters
    ----------
    config
        Names the dataset and label options.
    data_dir
        A directory (searched), or for Diabetes 130 also a ``.csv``/``.zip`` path.
    verify_checksum
        Check the Diabetes 130 file's SHA-256 against the published release.

    Returns
    -------
    LoadedDataset
        The cohort and the partition of ``config.features``.
    """
    from fedcare_core.data.paths import resolve_data_dir

    root = resolve_data_dir(data_dir)
    if config.dataset == "diabetes130":
        from fedcare_core.data.diabetes130 import (
            DIABETES130_FEATURE_SETS,
            find_diabetes130,
            load_diabetes130,
        )
        from fedcare_core.data.fetch import default_cache_dir

        if root is None:
            cached = default_cache_dir() / "diabetes130"
            if not cached.is_dir():
                raise DataError(
                    "no data directory given: pass --data-dir, set FEDCARE_DATA_DIR, or run "
                    "'fedcare data fetch diabetes130'"
                )
            root = cached
        path = find_diabetes130(root)
        cohort = load_diabetes130(
            path,
            readmission=config.readmission,  # type: ignore[arg-type]
            verify_checksum=verify_checksum,
            unseen_categories=config.unseen_categories,
        )
        return LoadedDataset(cohort, DIABETES130_FEATURE_SETS[config.features], str(path))
    if config.dataset == "mimic3":
        from fedcare_core.data.mimic3 import MIMIC3_PARTITION, load_mimic3
        from fedcare_core.data.mimic3.cohorts import DEFAULT_COHORT

        if root is None:
            raise DataError(
                "MIMIC-III is credentialed data: pass --data-dir pointing at the raw CSV tables"
            )
        mimic_dir = find_mimic_dir(Path(root))
        cohort = load_mimic3(
            mimic_dir,
            unseen_categories=config.unseen_categories,
            cohort=config.cohort or DEFAULT_COHORT,
            benchmark_split=config.benchmark_split,
        )
        return LoadedDataset(cohort, MIMIC3_PARTITION, str(mimic_dir))
    raise ConfigError(f"unknown dataset {config.dataset!r}")


def find_mimic_dir(root: Path) -> Path:
    """The MIMIC-III tables' folder: ``root`` itself, or its first sub-folder holding the tables.

    Parameters
    ----------
    root
        The tables' folder, or a datasets root holding e.g. ``mimic3-demo``.

    Returns
    -------
    Path
        The folder with ``ICUSTAYS.csv`` (``root`` when none is found, so the loader names it).
    """
    if any(p.name.upper().startswith("ICUSTAYS.CSV") for p in root.glob("*")):
        return root
    for candidate in sorted(root.iterdir()) if root.is_dir() else []:
        if candidate.is_dir() and any(
            p.name.upper().startswith("ICUSTAYS.CSV") for p in candidate.glob("*")
        ):
            return candidate
    return root


@dataclass(frozen=True)
class DatasetDefinition:
    """A dataset's documented definition: what can be agreed on without reading a row.

    Parameters
    ----------
    objectives
        The objectives the loader labels, with their definitions.
    partition
        The feature partition (of the feature set asked for).
    numeric_features, categorical_features
        The feature columns by type.
    vocabularies
        The documented category vocabularies by column.
    """

    objectives: tuple[Objective, ...]
    partition: FeaturePartition
    numeric_features: tuple[str, ...]
    categorical_features: tuple[str, ...]
    vocabularies: Mapping[str, tuple[str, ...]]


def dataset_definition(name: str, features: str = "paper") -> DatasetDefinition:
    """The documented definition of dataset ``name`` (no data is read).

    ``features`` names the feature set whose partition it carries (``data.features``).

    Raises
    ------
    ConfigError
        For an unknown dataset.
    """
    if name == "diabetes130":
        from fedcare_core.data import diabetes130 as d

        return DatasetDefinition(
            d.DIABETES130_OBJECTIVES,
            d.DIABETES130_FEATURE_SETS[features],
            d.DIABETES130_NUMERIC_FEATURES,
            d.DIABETES130_CATEGORICAL_FEATURES,
            d.DIABETES130_VOCABULARIES,
        )
    if name == "mimic3":
        from fedcare_core.data import mimic3 as m

        if features != "paper":
            raise ConfigError(f"feature set {features!r} is not defined for mimic3")

        return DatasetDefinition(
            m.MIMIC3_OBJECTIVES,
            m.MIMIC3_PARTITION,
            m.NUMERIC_FEATURES,
            m.CATEGORICAL_FEATURES,
            m.MIMIC3_VOCABULARIES,
        )
    raise ConfigError(f"unknown dataset {name!r}")
