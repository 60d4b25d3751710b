"""Sensitive attributes and the per-row tags evaluation groups rows by.

A dataset declares its sensitive attributes (age band, sex, race: :class:`SensitiveAttribute`,
from the ``sensitive`` key of its definition file); :func:`subgroup_labels` gives each row's
subgroup as text (a category's value, or a number's band). :func:`row_groups` tags the rows of
one split with those labels and with their patient as an ordinal ``0..P-1`` within the split,
so that the evaluation can bootstrap by patient and report each subgroup's metrics. No patient
identifier is kept: only its rank among the split's patients.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np
import pandas as pd

__all__ = [
    "MISSING",
    "RowGroups",
    "SensitiveAttribute",
    "row_groups",
    "subgroup_codes",
    "subgroup_labels",
]

#: The subgroup of a row whose value is missing.
MISSING = "missing"


@dataclass(frozen=True)
class SensitiveAttribute:
    """An attribute whose subgroups the evaluation reports metrics for.

    Parameters
    ----------
    name
        The attribute's name in reports (e.g. ``"age"``, ``"sex"``, ``"race"``).
    column
        The cohort's feature column holding it.
    bands
        A numeric column's band edges, strictly increasing (``(50, 70)``: ``<50``, ``50-70``,
        ``>=70``); empty: each value is its own subgroup.
    """

    name: str
    column: str
    bands: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        edges = self.bands
        if any(not math.isfinite(b) for b in edges):
            raise ValueError(f"sensitive attribute {self.name!r}: bands must be finite")
        if any(b >= c for b, c in pairwise(edges)):
            raise ValueError(
                f"sensitive attribute {self.name!r}: bands must be strictly increasing, "
                f"not {', '.join(f'{b:g}' for b in edges)}"
            )

    @property
    def band_names(self) -> tuple[str, ...]:
        """The bands' labels, lowest first (empty without bands)."""
        if not self.bands:
            return ()
        edges = [f"{b:g}" for b in self.bands]
        inner = [f"{low}-{high}" for low, high in pairwise(edges)]
        return (f"<{edges[0]}", *inner, f">={edges[-1]}")


def subgroup_labels(attribute: SensitiveAttribute, values: pd.Series) -> np.ndarray:
    """Each value's subgroup, as text.

    Parameters
    ----------
    attribute
        The attribute (its bands, for a number).
    values
        The attribute's column, one value per row: numbers (float, NaN missing) or categories
        (text, ``pd.NA``/NaN missing).

    Returns
    -------
    numpy.ndarray
        One label per row, a unicode array (``<U…``): a category's value as its text; with
        bands, a number's band (``<50``, ``50-70``, ``>=70`` for bands ``(50, 70)``: a value on
        an edge belongs to the band above it); without, a number as ``%g``; ``"missing"`` where
        the value is missing.

    Raises
    ------
    ValueError
        Bands for values that are not numbers.
    """
    missing = values.isna().to_numpy(dtype=bool)
    if attribute.bands:
        if not pd.api.types.is_numeric_dtype(values):
            raise ValueError(
                f"sensitive attribute {attribute.name!r}: bands need numbers, "
                f"column {attribute.column!r} holds {values.dtype}"
            )
        numbers = values.to_numpy(dtype=np.float64, na_value=np.nan)
        index = np.digitize(np.where(missing, 0.0, numbers), np.asarray(attribute.bands))
        names = np.asarray(attribute.band_names)
        text = names[index]
    elif pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
        numbers = values.to_numpy(dtype=np.float64, na_value=np.nan)
        text = np.asarray([f"{v:g}" for v in np.where(missing, 0.0, numbers)], dtype=str)
    else:
        text = np.asarray([str(v) for v in values.to_numpy(dtype=object)], dtype=str)
    return np.asarray(np.where(missing, MISSING, text), dtype=str)


def subgroup_codes(labels: np.ndarray) -> np.ndarray:
    """Each row's subgroup as an int64 code (codes in sorted label order; -1: missing).

    Parameters
    ----------
    labels
        One label per row (:func:`subgroup_labels`).

    Returns
    -------
    numpy.ndarray
        int64 codes, equal for equal labels within the call.
    """
    names, codes = np.unique(np.asarray(labels, dtype=str), return_inverse=True)
    out = np.asarray(codes, dtype=np.int64).reshape(-1)
    missing = np.flatnonzero(names == MISSING)
    if len(missing):
        out[out == missing[0]] = -1
    return out


@dataclass(frozen=True)
class RowGroups:
    """The tags of one split's rows: their patient's ordinal and their subgroups.

    Parameters
    ----------
    groups
        int64, one per row: the row's patient as ``0..P-1`` within the split (a patient's rows
        share it).
    subgroups
        Attribute name → one label per row (a unicode array, :func:`subgroup_labels`).
    """

    groups: np.ndarray
    subgroups: Mapping[str, np.ndarray] = field(default_factory=dict)


def row_groups(
    patient: np.ndarray, features: pd.DataFrame, sensitive: Sequence[SensitiveAttribute]
) -> RowGroups:
    """The tags of a split's rows.

    Parameters
    ----------
    patient
        The rows' patient keys.
    features
        The rows' features (the sensitive attributes' columns among them).
    sensitive
        The attributes to label.

    Returns
    -------
    RowGroups
        The rows' patient ordinals (ranks of their keys among the split's) and subgroups.
    """
    ordinals = np.unique(np.asarray(patient), return_inverse=True)[1]
    return RowGroups(
        groups=np.asarray(ordinals, dtype=np.int64).reshape(-1),
        subgroups={a.name: subgroup_labels(a, features[a.column]) for a in sensitive},
    )
