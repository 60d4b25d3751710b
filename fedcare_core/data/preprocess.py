"""Per-client feature encoding, fitted on that client's training rows only.

Numeric features: median imputation, standardisation (training mean and std) and a missing
indicator, always added so that the encoded layout is identical at every client; with
``data.scaling`` pooled, the imputation and scale are the federation's statistics instead
(:mod:`fedcare_core.data.pooled_scaling`). Categorical
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

from fedcare_core.data.pooled_scaling import PooledScale, quantile_scores
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
    quantiles
        Pooled quantile knots of the numeric columns, one row each: a value becomes the normal
        score of its rank among them instead of ``(x − mean) / std``
        (:mod:`fedcare_core.data.pooled_scaling`); None: standardised.
    """

    numeric: tuple[str, ...]
    medians: np.ndarray
    means: np.ndarray
    stds: np.ndarray
    categorical: tuple[tuple[str, tuple[str, ...]], ...]
    quantiles: np.ndarray | None = None

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
        out: dict[str, Any] = {
            "numeric": list(self.numeric),
            "medians": [float(v) for v in self.medians],
            "means": [float(v) for v in self.means],
            "stds": [float(v) for v in self.stds],
            "categorical": [[col, list(vocab)] for col, vocab in self.categorical],
        }
        if self.quantiles is not None:
            out["quantiles"] = [[float(v) for v in row] for row in self.quantiles]
        return out

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
            quantiles=(
                None
                if data.get("quantiles") is None
                else np.asarray(data["quantiles"], dtype=np.float64)
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
            if self.quantiles is None:
                out[:, :k] = (filled - self.means) / self.stds
            else:
                for j in range(k):
                    out[:, j] = quantile_scores(filled[:, j], self.quantiles[j])
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
    pooled: Mapping[str, PooledScale] | None = None,
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
    pooled
        Statistics pooled across the clients (:mod:`fedcare_core.data.pooled_scaling`); every
        numeric column it names is imputed and scaled by them instead of the client's own
        (all with quantile knots, or none, as one scaling fits them all).

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
    quantiles = None
    if pooled and numeric:
        medians, means, stds, quantiles = _pooled_statistics(numeric, medians, means, stds, pooled)
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
        quantiles=quantiles,
    )


def _pooled_statistics(
    numeric: Sequence[str],
    medians: np.ndarray,
    means: np.ndarray,
    stds: np.ndarray,
    pooled: Mapping[str, PooledScale],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """The client's statistics with the pooled ones in place (module :func:`fit_encoder`)."""
    medians, means, stds = medians.copy(), means.copy(), stds.copy()
    rows = []
    for j, c in enumerate(numeric):
        scale = pooled.get(c)
        if scale is None:
            raise ValueError(f"no pooled statistics for numeric column {c!r}")
        medians[j] = means[j] = scale.center
        stds[j] = scale.scale
        rows.append(scale.knots)
    if all(r is None for r in rows):
        return medians, means, stds, None
    return medians, means, stds, np.vstack([np.asarray(r, dtype=np.float64) for r in rows])
