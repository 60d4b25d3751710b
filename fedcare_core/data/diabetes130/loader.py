"""The Diabetes 130-US loader: find, read and check the file, then derive labels and features."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd

from fedcare_core.data.categories import CategorySource, check_known_categories
from fedcare_core.data.cohort import Cohort
from fedcare_core.data.diabetes130.definition import DIABETES130_OBJECTIVES
from fedcare_core.data.diabetes130.features import build_features
from fedcare_core.data.diabetes130.labels import ReadmissionDefinition, build_labels
from fedcare_core.data.diabetes130.plausibility import check_plausible
from fedcare_core.data.diabetes130.reading import check_sources, read_table
from fedcare_core.data.diabetes130.schema import (
    DIABETES130_CATEGORICAL_FEATURES,
    DIABETES130_CSV_NAME,
    DIABETES130_CSV_SHA256,
    DIABETES130_NUMERIC_FEATURES,
    DIABETES130_VOCABULARIES,
)
from fedcare_core.data.diabetes130.source import find_diabetes130, read_source
from fedcare_core.errors import ChecksumError, ConfigError

__all__ = ["load_diabetes130"]


def load_diabetes130(
    data_dir: str | Path,
    *,
    readmission: ReadmissionDefinition = "30d",
    verify_checksum: bool = True,
    unseen_categories: str = "refuse",
) -> Cohort:
    """Load Diabetes 130-US as a three-objective cohort.

    Parameters
    ----------
    data_dir
        Path to ``diabetic_data.csv``, to a ``.zip`` holding it, or a directory holding either
        (see :func:`find_diabetes130`). An archive is streamed, never extracted to disk.
    readmission
        ``"30d"``: the readmission label is ``readmitted == "<30"`` (the standard definition);
        ``"any"``: ``readmitted != "NO"``.
    verify_checksum
        Check the CSV's SHA-256 against :data:`DIABETES130_CSV_SHA256`. Pass ``False`` (the CLI's
        ``--no-verify``) to load a modified file on purpose; its contents are validated either
        way.
    unseen_categories
        A value outside a column's declared vocabulary (``DIABETES130_VOCABULARIES``):
        ``"refuse"`` stops with the file, column and rows; ``"other"`` keeps it, to be encoded
        in the column's ``other`` indicator, and notes how many there were.

    Returns
    -------
    Cohort
        One row per encounter. Objectives, in order: ``early_discharge``
        (``time_in_hospital <= 3``), ``readmission`` and ``los`` (``time_in_hospital`` in days).
        Encounters discharged expired (codes 11, 19, 20, 21) or to hospice (13, 14) have a NaN
        readmission label. 46 features (never ``encounter_id``, ``patient_nbr``,
        ``time_in_hospital`` or ``readmitted``): ``age`` as the bracket's midpoint and the seven
        counts are float; the rest are strings, with ``diag_1/2/3`` mapped to ICD-9 groups
        (:func:`~fedcare_core.data.diabetes130.features.icd9_group`) and missing values (``?``)
        left missing. ``patient`` factorises ``patient_nbr``; ``strata`` is
        ``admission_source_id``.

    Raises
    ------
    ChecksumError
        If ``verify_checksum`` and the CSV's SHA-256 differs from the published file's.
    DataError
        If the file cannot be found or read, is empty, malformed or truncated, lacks a column,
        holds a non-numeric value in a numeric column, a label source value out of its
        domain (``time_in_hospital`` outside 1..14, ``readmitted`` outside NO/<30/>30), an
        implausible value (see
        :func:`~fedcare_core.data.diabetes130.plausibility.check_plausible`) or, unless
        ``unseen_categories="other"``, a category outside its column's vocabulary.
    ConfigError
        If ``readmission`` is neither ``"30d"`` nor ``"any"``.

    """
    if readmission not in ("30d", "any"):
        raise ConfigError(f"readmission must be '30d' or 'any', got {readmission!r}")
    data, name = read_source(find_diabetes130(data_dir))
    digest, checksum_notes = _checksum(data, name, enforce=verify_checksum)
    df, unexpected, chk = read_table(data, name)
    numbers = check_sources(df, chk)
    check_plausible(df, numbers, chk)
    labels, label_notes = build_labels(df["readmitted"], numbers, readmission)
    features = build_features(df, numbers, chk)
    rows = np.arange(1, len(df) + 1)
    category_notes = check_known_categories(
        features,
        DIABETES130_VOCABULARIES,
        {c: CategorySource(name, c, rows) for c in DIABETES130_VOCABULARIES},
        unseen_categories,
    )
    codes, _ = pd.factorize(numbers["patient_nbr"], sort=False)
    notes = [
        f"source: {name}",
        f"{len(df):,} encounters, {int(codes.max()) + 1:,} distinct patients",
        *label_notes,
        *checksum_notes,
        *category_notes,
    ]
    if unexpected:
        notes.append(f"ignored unexpected column(s): {', '.join(unexpected)}")
    return Cohort(
        dataset="diabetes130",
        features=features,
        numeric_features=DIABETES130_NUMERIC_FEATURES,
        categorical_features=DIABETES130_CATEGORICAL_FEATURES,
        labels=labels,
        objectives=DIABETES130_OBJECTIVES,
        patient=np.asarray(codes, dtype=np.int64),
        strata=features["admission_source_id"].rename("admission_source_id"),
        source_sha256=digest,
        notes=tuple(notes),
        vocabularies=DIABETES130_VOCABULARIES,
    )


def _checksum(data: bytes, name: str, *, enforce: bool) -> tuple[str, list[str]]:
    """The CSV's SHA-256; raise on a mismatch if ``enforce``, else note whether it matches."""
    digest = hashlib.sha256(data).hexdigest()
    if enforce and digest != DIABETES130_CSV_SHA256:
        raise ChecksumError(
            f"SHA-256 mismatch: expected {DIABETES130_CSV_SHA256}, got {digest}. This is not the "
            f"published {DIABETES130_CSV_NAME} (modified, truncated or a different version). "
            "Pass --no-verify (verify_checksum=False) to load a modified file on purpose.",
            file=name,
        )
    if enforce:
        return digest, []
    match = "matches" if digest == DIABETES130_CSV_SHA256 else "does NOT match"
    return digest, [f"checksum not enforced; SHA-256 {digest} {match} the published file"]
