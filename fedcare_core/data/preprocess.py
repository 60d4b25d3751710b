"""Per-client feature encoding, fitted on that client's training rows only.

Numeric features: median imputation, standardisation (training mean and std) and a missing
indicator, always added so that the encoded layout is identical at every client. Categorical
features: one-hot over a vocabulary plus ``other`` and ``missing`` columns. A declared vocabulary
(a ``pd.CategoricalDtype`` on the cohort column: a data-dictionary fact, not a statistic) is used
as is; otherwise the vocabulary is the client's most frequent training values. Shared (common)
features must have declared vocabularies, or clients would disagree on the backbone's input layout.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from fedcare_core.errors import ConfigError

#: Standard deviations below this are treated as constant columns (scaled by 1).
_MIN_STD = 1e-8


@dataclass(frozen=True)
class FeatureEncoder:
    """A fitted encoder for an ordered list of raw feature columns.

    Parameters
    ----------
    numeric
        Numeric columns, in order.
    medians, means, stds
        Training statistics of the numeric columns (same order).
    categorical
        ``(column, vocabulary)`` pairs, in order.
    """

    numeric: tuple[str, ...]
    medians: np.ndarray
    means: np.ndarray
    stds: np.ndarray
    categorical: tuple[tuple[str, tuple[str, ...]], ...]

    @property
    def width(self) -> int:
        """Number of encoded columns."""
        return 2 * len(self.numeric) + sum(len(v) + 2 for _, v in self.categorical)

    def column_names(self) -> list[str]:
        """Names of the encoded columns (for model signatures and debugging)."""
        names = [f"{c}" for c in self.numeric] + [f"{c}__missing" for c in self.numeric]
        for col, vocab in self.categorical:
            names.extend(f"{col}={v}" for v in vocab)
            names.extend([f"{col}=__other__", f"{col}=__missing__"])
        return names

    def to_dict(self) -> dict[str, Any]:
        """The fitted statistics and vocabularies as JSON-able data (floats exactly)."""
        return {
            "numeric": list(self.numeric),
            "medians": [float(v) for v in self.medians],
            "means": [float(v) for v in self.means],
            "stds": [float(v) for v in self.stds],
            "categorical": [[col, list(vocab)] for col, vocab in self.categorical],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FeatureEncoder:
        """The encoder :meth:`to_dict` described."""
        return cls(
            numeric=tuple(str(c) for c in data["numeric"]),
            medians=np.asarray(data["medians"], dtype=np.float64),
            means=np.asarray(data["means"], dtype=np.float64),
            stds=np.asarray(data["stds"], dtype=np.float64),
            categorical=tuple(
                (str(col), tuple(str(v) for v in vocab)) for col, vocab in data["categorical"]
            ),
        )

    def transform(self, frame: pd.DataFrame) -> np.ndarray:
        """Encode ``frame`` (raw features) into a float32 matrix of shape (n, width)."""
        n = len(frame)
        out = np.zeros((n, self.width), dtype=np.float32)
        k = len(self.numeric)
        if k:
            raw = frame.loc[:, list(self.numeric)].to_numpy(dtype=np.float64, na_value=np.nan)
            missing = np.isnan(raw)
            filled = np.where(missing, self.medians, raw)
            out[:, :k] = (filled - self.means) / self.stds
            out[:, k : 2 * k] = missing
        pos = 2 * k
        for col, vocab in self.categorical:
            values = frame[col]
            isna = values.isna().to_numpy()
            codes = pd.Index(list(vocab), dtype=object).get_indexer(
                pd.Index(values.astype("object").astype(str).where(~isna, None))
            )
            known = codes >= 0
            rows = np.arange(n)
            out[rows[known], pos + codes[known]] = 1.0
            other = ~known & ~isna
            out[other, pos + len(vocab)] = 1.0
            out[isna, pos + len(vocab) + 1] = 1.0
            pos += len(vocab) + 2
        return out


def _declared_vocabulary(series: pd.Series) -> tuple[str, ...] | None:
    """The vocabulary declared by a categorical dtype, or None."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        return tuple(str(c) for c in series.dtype.categories)
    return None


def fit_encoder(
    train: pd.DataFrame,
    columns: Sequence[str],
    numeric_columns: Sequence[str],
    *,
    shared: Sequence[str] = (),
    vocabularies: Mapping[str, tuple[str, ...]] | None = None,
    max_categories: int = 20,
) -> FeatureEncoder:
    """Fit an encoder on training rows.

    Parameters
    ----------
    train
        The client's training rows (raw features).
    columns
        Columns to encode, in order (numeric ones first in the output, then categorical).
    numeric_columns
        Which of ``columns`` are numeric; the rest are categorical.
    shared
        Columns whose layout must agree across clients; a categorical one without a declared
        vocabulary raises :class:`ConfigError`.
    vocabularies
        Declared vocabularies (data-dictionary facts) by column.
    max_categories
        Vocabulary cap for undeclared categorical columns (most frequent training values).

    Returns
    -------
    FeatureEncoder
        The fitted encoder.
    """
    num_set = set(numeric_columns)
    numeric = tuple(c for c in columns if c in num_set)
    categorical_cols = [c for c in columns if c not in num_set]
    if numeric:
        raw = train.loc[:, list(numeric)].to_numpy(dtype=np.float64, na_value=np.nan)
        with warnings.catch_warnings():
            # An all-missing column (e.g. vitals without CHARTEVENTS) imputes to 0 below.
            warnings.simplefilter("ignore", RuntimeWarning)
            medians = np.nanmedian(raw, axis=0) if len(raw) else np.zeros(len(numeric))
        medians = np.where(np.isfinite(medians), medians, 0.0)
        filled = np.where(np.isnan(raw), medians, raw)
        means = filled.mean(axis=0) if len(raw) else np.zeros(len(numeric))
        stds = filled.std(axis=0) if len(raw) else np.ones(len(numeric))
        stds = np.where(stds > _MIN_STD, stds, 1.0)
    else:
        medians = means = np.zeros(0)
        stds = np.ones(0)
    shared_set = set(shared)
    categorical: list[tuple[str, tuple[str, ...]]] = []
    for col in categorical_cols:
        vocab = (vocabularies or {}).get(col) or _declared_vocabulary(train[col])
        if vocab is None:
            if col in shared_set:
                raise ConfigError(
                    f"shared feature {col!r} is categorical without a declared vocabulary; "
                    "clients would disagree on the backbone's input layout"
                )
            counts = train[col].dropna().astype(str).value_counts(sort=True)
            vocab = tuple(sorted(counts.index[:max_categories]))
        categorical.append((col, vocab))
    return FeatureEncoder(
        numeric=numeric,
        medians=medians.astype(np.float64),
        means=means.astype(np.float64),
        stds=stds.astype(np.float64),
        categorical=tuple(categorical),
    )
