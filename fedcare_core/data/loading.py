"""Loading a registered dataset (:mod:`fedcare_core.data.registry`), and its definition."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fedcare_core.config import DataConfig
from fedcare_core.data.choices import check_dataset_choices
from fedcare_core.data.cohort import Cohort
from fedcare_core.data.definition import DatasetDefinition
from fedcare_core.data.partition import FeaturePartition
from fedcare_core.data.registry import get_dataset


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
        A directory (searched), or for Diabetes 130 also a ``.csv``/``.zip`` path (None:
        ``FEDCARE_DATA_DIR``, else where the dataset's source looks, e.g. the download cache).
    verify_checksum
        Check the Diabetes 130 file's SHA-256 against the published release.

    Returns
    -------
    LoadedDataset
        The cohort and the partition of ``config.features``.

    Raises
    ------
    ConfigError
        An unknown dataset.
    DataError
        From the dataset's source: no data, or data its checks refuse.
    """
    from fedcare_core.data.paths import checked_data_dir

    check_dataset_choices(config)
    spec = get_dataset(config.dataset)
    source = spec.load_source()
    path = source.locate(checked_data_dir(data_dir, looks_elsewhere=bool(spec.definition_text)))
    cohort, read = source.load(config, path, verify_checksum=verify_checksum)
    return LoadedDataset(cohort, source.definition(config.features).partition, read)


def dataset_definition(name: str, features: str = "paper") -> DatasetDefinition:
    """The documented definition of dataset ``name`` (no data is read).

    ``features`` names the feature set whose partition it carries (``data.features``).

    Raises
    ------
    ConfigError
        For an unknown dataset.
    """
    return get_dataset(name).load_source().definition(features)
