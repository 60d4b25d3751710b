"""A site file's patients, to check that no patient is at two sites of one federation.

A loaded :class:`~fedcare_core.data.cohort.Cohort` keys its patients ``0..n-1`` within its own
file, so two sites' cohorts cannot be compared. :func:`patient_keys` reads the file's patient
identifier column again (``patient_nbr`` of Diabetes 130-US, ``SUBJECT_ID`` of MIMIC-III's
``PATIENTS``) after the file passed its checks. The keys stay in memory: they are compared, and
only counts are ever reported.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def patient_keys(dataset: str, data: str | Path, definition: str | None = None) -> np.ndarray:
    """The distinct patient identifiers of the (checked) file or folder ``data``, as strings.

    Parameters
    ----------
    dataset
        A registered dataset (another: no keys, nothing to compare).
    data
        What the dataset's loader read (a CSV, a zip or a folder).
    definition
        The text of the definition the file was read by (a site's own), if any.

    Returns
    -------
    numpy.ndarray
        Sorted distinct identifiers (strings, so that ``007`` and ``7`` stay apart as written).
    """
    from fedcare_core.data.registry import registered

    if definition is not None:
        from fedcare_core.data.declared import declared_source_of_text

        return declared_source_of_text(definition, dataset).patient_keys(Path(data))
    spec = registered(dataset)
    if spec is None:
        return np.zeros(0, dtype=str)
    return spec.load_source().patient_keys(Path(data))
