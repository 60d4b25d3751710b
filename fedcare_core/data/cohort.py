"""The dataset-independent cohort table every loader returns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from fedcare_core.data.subgroups import SensitiveAttribute
from fedcare_core.objectives import objective_kind


@dataclass(frozen=True)
class Objective:
    """One clinical prediction objective.

    Parameters
    ----------
    name
        Identifier used in configs and results (e.g. ``"readmission"``).
    kind
        Its kind, an installed objective kind (:mod:`fedcare_core.objectives`): ``binary``
        (weighted BCE, AUROC) or ``regression`` (Huber on ``log1p``, MAE in days), FedCARE's own.
    description
        One line saying how the label is defined.
    """

    name: str
    kind: str
    description: str = ""

    @property
    def metric(self) -> str:
        """The evaluation metric's name: its kind's (``"auroc"``, ``"mae_days"``)."""
        return objective_kind(self.kind).metric


@dataclass(frozen=True)
class Cohort:
    """A loaded dataset: one row per sample (encounter or ICU stay).

    Parameters
    ----------
    dataset
        ``"diabetes130"`` or ``"mimic3"``.
    features
        Raw feature values, one column per logical feature. Numeric columns are float
        (NaN = missing); categorical columns are strings (``pd.NA``/NaN = missing). Never holds
        identifiers or a label's source column.
    numeric_features, categorical_features
        Partition of ``features.columns`` by type.
    labels
        One float column per objective; NaN marks a sample that does not take part in that
        objective (e.g. expired patients for readmission).
    objectives
        The objectives, in a fixed order.
    patient
        Integer patient key per row, used only to keep a patient's rows together in splits and
        client assignment. Never logged or written anywhere.
    strata
        A natural grouping key per row (e.g. admission source), for non-IID client assignment.
    source_sha256
        SHA-256 of the main source file (for provenance tags).
    notes
        Human-readable facts about cohort construction (rows dropped and why).
    vocabularies
        Declared category lists of categorical features (from the dataset's data dictionary,
        not computed from rows). Shared features need one so every client encodes them alike.
    test_patients
        Patient keys a published split puts in the test set (e.g. the MIMIC-III benchmark's):
        each client's test split is then exactly its patients among them. None: drawn.
    sensitive
        The attributes the evaluation reports subgroups of (age band, sex, race), each over a
        column of ``features`` (in the feature partition or not).
    """

    dataset: str
    features: pd.DataFrame
    numeric_features: tuple[str, ...]
    categorical_features: tuple[str, ...]
    labels: pd.DataFrame
    objectives: tuple[Objective, ...]
    patient: np.ndarray
    strata: pd.Series | None = None
    source_sha256: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)
    vocabularies: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    test_patients: np.ndarray | None = None
    sensitive: tuple[SensitiveAttribute, ...] = ()

    def __post_init__(self) -> None:
        n = len(self.features)
        if len(self.labels) != n or len(self.patient) != n:
            raise ValueError("features, labels and patient must have the same number of rows")
        cols = set(self.features.columns)
        if set(self.numeric_features) | set(self.categorical_features) != cols:
            raise ValueError("numeric_features + categorical_features must cover features.columns")
        if [o.name for o in self.objectives] != list(self.labels.columns):
            raise ValueError("labels' columns must be the objectives, in order")
        unknown = [a.column for a in self.sensitive if a.column not in cols]
        if unknown:
            raise ValueError(f"sensitive attribute column(s) {unknown} are not features")
        if len({a.name for a in self.sensitive}) != len(self.sensitive):
            raise ValueError("sensitive attributes' names must be distinct")

    @property
    def n_rows(self) -> int:
        """Number of samples."""
        return len(self.features)

    def objective(self, name: str) -> Objective:
        """Return the objective called ``name``."""
        for o in self.objectives:
            if o.name == name:
                return o
        raise KeyError(name)
