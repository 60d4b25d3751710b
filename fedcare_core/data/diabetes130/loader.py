"""The Diabetes 130-US loader: its definition file, read by the loader every dataset shares.

``fedcare_core/data/definitions/diabetes130.yaml`` declares the file's 50 columns, their value
sets and plausible ranges, the three labels and the paper's partition; the loader of datasets
defined by a file (:func:`fedcare_core.data.declared.loader.load_declared`) reads, checks and
labels the published file by it (``tests/fedcare_core/data/test_builtin_definitions.py`` holds
the digests of the cohort the former Python loader built).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from fedcare_core.data.cohort import Cohort
from fedcare_core.data.declared import DatasetDeclaration, read_definition
from fedcare_core.data.declared.loader import load_declared
from fedcare_core.data.definitions import builtin_definition
from fedcare_core.errors import ConfigError

__all__ = ["diabetes130_declaration", "load_diabetes130"]

#: ``--readmission``: within 30 days (``readmitted == "<30"``) or at all (``!= "NO"``).
_READMISSION_DEFINITIONS = ("30d", "any")
#: ``--early-discharge`` (the definition's early-discharge variants, ``los`` its own label).
_EARLY_DISCHARGE_DEFINITIONS = ("los", "home", "home-or-not")
#: ``--readmission-exclude`` (``deaths``: the readmission objective's own exclusion).
_READMISSION_EXCLUSIONS = ("deaths", "deaths-ama-transfers")


@cache
def diabetes130_declaration() -> DatasetDeclaration:
    """The built-in definition of Diabetes 130-US (read once)."""
    return read_definition(builtin_definition("diabetes130"))


def load_diabetes130(
    data_dir: str | Path,
    *,
    readmission: str = "30d",
    verify_checksum: bool = True,
    unseen_categories: str = "refuse",
    early_discharge: str = "los",
    readmission_exclude: str = "deaths",
) -> Cohort:
    """Load Diabetes 130-US as a three-objective cohort.

    Parameters
    ----------
    data_dir
        Path to ``diabetic_data.csv``, to a ``.zip`` holding it, or a directory holding either
        (searched recursively). An archive is streamed, never extracted to disk.
    readmission
        ``"30d"``: the readmission label is ``readmitted == "<30"`` (the standard definition);
        ``"any"``: ``readmitted != "NO"``.
    verify_checksum
        Check the CSV's SHA-256 against the published file's (``--no-verify`` turns it off to
        load a modified file on purpose); its contents are validated either way.
    unseen_categories
        A value outside a feature's declared vocabulary: ``"refuse"`` stops with the file,
        column and rows; ``"other"`` keeps it, encoded in the column's ``other`` indicator.
    early_discharge
        ``"los"``: ``time_in_hospital <= 3`` for every encounter (the paper's); ``"home"``:
        discharged home alive (disposition 1, 6, 8) within 3 days, among encounters discharged
        home (others get no label); ``"home-or-not"``: the same positives, every other
        encounter negative.
    readmission_exclude
        ``"deaths"``: no readmission label for encounters discharged expired or to hospice;
        ``"deaths-ama-transfers"``: nor for discharges against medical advice (7) or transfers
        to another short-term hospital (2).

    Returns
    -------
    Cohort
        One row per encounter; objectives ``early_discharge`` (``time_in_hospital <= 3``),
        ``readmission`` (no label for encounters discharged expired or to hospice) and ``los``
        (``time_in_hospital`` in days); 46 features (``age`` as its bracket's midpoint, the
        seven counts as numbers, the diagnoses as ICD-9 chapter groups, the rest as strings).

    Raises
    ------
    ChecksumError
        If ``verify_checksum`` and the CSV is not the published file.
    DataError
        A file that cannot be found or read, or a value the definition refuses (the message
        names the file, the column and the rows).
    ConfigError
        If ``readmission``, ``early_discharge`` or ``readmission_exclude`` is not one of its
        choices.
    """
    for name, value, allowed in (
        ("readmission", readmission, _READMISSION_DEFINITIONS),
        ("early_discharge", early_discharge, _EARLY_DISCHARGE_DEFINITIONS),
        ("readmission_exclude", readmission_exclude, _READMISSION_EXCLUSIONS),
    ):
        if value not in allowed:
            raise ConfigError(
                f"{name} must be one of {', '.join(map(repr, allowed))}, got {value!r}"
            )
    cohort, _ = load_declared(
        diabetes130_declaration(),
        Path(data_dir).expanduser(),
        verify_checksum=verify_checksum,
        unseen_categories=unseen_categories,
        variants=(readmission, early_discharge, readmission_exclude),
    )
    return cohort
