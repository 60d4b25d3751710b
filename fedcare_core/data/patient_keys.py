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

#: The column that names a patient in each dataset's files.
PATIENT_COLUMNS = {"diabetes130": "patient_nbr", "mimic3": "SUBJECT_ID"}


def patient_keys(dataset: str, data: str | Path) -> np.ndarray:
    """The distinct patient identifiers of the (checked) file or folder ``data``, as strings.

    Parameters
    ----------
    dataset
        ``diabetes130`` or ``mimic3`` (another dataset: no keys, nothing to compare).
    data
        What the dataset's loader read (a CSV, a zip or a folder).

    Returns
    -------
    numpy.ndarray
        Sorted distinct identifiers (strings, so that ``007`` and ``7`` stay apart as written).
    """
    if dataset == "diabetes130":
        from fedcare_core.data.diabetes130.reading import read_table
        from fedcare_core.data.diabetes130.source import find_diabetes130, read_source

        table, _, _ = read_table(*read_source(find_diabetes130(data)))
        column = table[PATIENT_COLUMNS[dataset]]
    elif dataset == "mimic3":
        from fedcare_core.data.mimic3.reader import find_table, read_small
        from fedcare_core.data.mimic3.schema import PATIENTS

        path = find_table(Path(data), "PATIENTS", required=True)
        assert path is not None
        column = read_small(path, PATIENTS, 2_000_000)[PATIENT_COLUMNS[dataset]]
        column = column.dropna().astype("int64")  # read as float: 1000.0 is patient 1000
    else:
        return np.zeros(0, dtype=str)
    return np.unique(column.dropna().astype(str).str.strip().to_numpy(dtype=str))
