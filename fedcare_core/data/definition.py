"""A dataset's documented definition: what a federation agrees on without reading a row."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from fedcare_core.data.cohort import Objective
from fedcare_core.data.partition import FeaturePartition


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
