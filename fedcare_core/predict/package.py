"""A client's deployed model with its preprocessing: raw rows in, named predictions out.

A package holds everything a hospital needs to score new patients with the model it deploys,
and nothing about any patient: the encoders fitted on the client's training rows (medians,
means, standard deviations, vocabularies), the predictor's rebuild recipe and weights
(:mod:`fedcare_core.predict.predictors`), and the run's policy for unseen categories. On disk it is
two files — ``package.json`` and ``weights.pt`` (a ``state_dict``, read with
``torch.load(weights_only=True)``: no pickled code) — which the MLflow model wraps
(:mod:`fedcare.tracking.client_models`).

:meth:`ModelPackage.score` reads rows as the dataset's loader would
(:func:`fedcare_core.data.rows.row_format`), encodes them with the client's encoders and
returns one named column per client objective: ``<objective>_probability`` for a binary
objective, ``<objective>_days`` for length of stay. After those come, for each length-of-stay
objective, the ends of its prediction interval, ``<objective>_days_low`` and
``<objective>_days_high``: split conformal on the client's validation rows, 90 % nominal
coverage unless the package says otherwise (``package.json``: ``intervals``). The two columns
are always there; they are NaN where the package holds no interval for the objective (a package
written before intervals, or a client with too few validation rows for the coverage).
"""

from __future__ import annotations

import json
import pickle
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from fedcare_core import __version__
from fedcare_core.config import UNSEEN_CATEGORY_POLICIES
from fedcare_core.data.preprocess import FeatureEncoder
from fedcare_core.data.rows import RowFormat, row_format
from fedcare_core.errors import ConfigError
from fedcare_core.evaluation.conformal import METHOD
from fedcare_core.objectives import objective_kind
from fedcare_core.predict.predictors import (
    ClientPredictor,
    predictor_from_spec,
)

__all__ = [
    "PACKAGE_FILE",
    "WEIGHTS_FILE",
    "ModelPackage",
    "interval_columns",
    "load_package",
    "output_column",
    "save_package",
]

#: The package's description (JSON) and weights, inside its folder.
PACKAGE_FILE = "package.json"
WEIGHTS_FILE = "weights.pt"
#: Version of the package layout.
_PACKAGE_FORMAT = 1


def output_column(objective: str, kind: str) -> str:
    """The output column of ``objective``, its kind's (``<objective>_probability``)."""
    return objective_kind(kind).prediction_column(objective)


def interval_columns(objective: str) -> tuple[str, str]:
    """A length-of-stay objective's interval columns: ``<objective>_days_low`` and ``_high``."""
    return f"{objective}_days_low", f"{objective}_days_high"


@dataclass(frozen=True)
class ModelPackage:
    """One client's deployed model with its preprocessing.

    Parameters
    ----------
    dataset
        The dataset its rows come from (``"diabetes130"`` or ``"mimic3"``).
    algorithm
        The method that trained it.
    client_id
        The client (0..K−1).
    common_encoder, private_encoder
        The client's encoders of its common and private features.
    predictor
        The model the client deploys.
    unseen_categories
        The run's policy for a category outside its column's documented values (``"refuse"``
        or ``"other"``); :meth:`score` may override it.
    definition
        The text of the dataset's definition file (a dataset defined by a file), so that the
        model reads rows wherever it is scored; None: a built-in dataset.
    """

    dataset: str
    algorithm: str
    client_id: int
    common_encoder: FeatureEncoder
    private_encoder: FeatureEncoder
    predictor: ClientPredictor
    unseen_categories: str = "refuse"
    definition: str | None = None

    def row_format(self) -> RowFormat:
        """How a row to score is read (:func:`~fedcare_core.data.rows.row_format`)."""
        return row_format(self.dataset, self.definition)

    @property
    def objectives(self) -> tuple[str, ...]:
        """The objectives it predicts, in output order."""
        return self.predictor.objectives

    @property
    def input_columns(self) -> list[str]:
        """The feature columns it reads: the common ones and its client's private ones.

        In the dataset's row order (:func:`~fedcare_core.data.rows.row_format`), else in the
        encoders' order.
        """
        used = [
            *self.common_encoder.numeric,
            *(c for c, _ in self.common_encoder.categorical),
            *self.private_encoder.numeric,
            *(c for c, _ in self.private_encoder.categorical),
        ]
        order = self.row_format().columns
        return [c for c in order if c in set(used)] if order else list(dict.fromkeys(used))

    @property
    def numeric_columns(self) -> set[str]:
        """The input columns its encoders treat as numbers."""
        return {*self.common_encoder.numeric, *self.private_encoder.numeric}

    @property
    def regression_objectives(self) -> list[str]:
        """Its length-of-stay objectives, in output order (each has two interval columns)."""
        pairs = zip(self.predictor.objectives, self.predictor.kinds, strict=True)
        return [s for s, k in pairs if objective_kind(k).interval]

    @property
    def output_columns(self) -> list[str]:
        """The names of its output columns.

        One per objective, in the predictor's order (``<objective>_probability`` or
        ``<objective>_days``), then the two interval ends of each length-of-stay objective
        (``<objective>_days_low``, ``<objective>_days_high``).
        """
        points = [
            output_column(s, k)
            for s, k in zip(self.predictor.objectives, self.predictor.kinds, strict=True)
        ]
        return points + [c for s in self.regression_objectives for c in interval_columns(s)]

    def interval_summary(self) -> dict[str, dict[str, Any]]:
        """Each length-of-stay objective's interval columns, nominal coverage and fit.

        ``coverage`` is None where the package holds no interval (its columns are NaN); the
        interval is fitted on ``validation_rows`` of the client's validation split by split
        conformal prediction on log1p-days residuals (:mod:`fedcare_core.evaluation.conformal`).
        """
        out = {}
        for s in self.regression_objectives:
            interval = self.predictor.intervals.get(s)
            low, high = interval_columns(s)
            out[s] = {
                "low": low,
                "high": high,
                "coverage": interval.coverage if interval and interval.available else None,
                "method": METHOD,
                "validation_rows": interval.n if interval else None,
                "reason": interval.reason if interval else "no interval in this package",
            }
        return out

    def score(
        self,
        rows: pd.DataFrame,
        *,
        source: str | None = None,
        unseen_categories: str | None = None,
    ) -> pd.DataFrame:
        """Predict each row, labels not needed.

        Parameters
        ----------
        rows
            Raw rows of the dataset (:func:`fedcare_core.data.rows.row_format`); label,
            identifier and other columns are ignored.
        source
            The file the rows come from, for messages (None: not named).
        unseen_categories
            Overrides the run's policy for unseen categories.

        Returns
        -------
        pandas.DataFrame
            :attr:`output_columns` as float64, on ``rows``' index: each objective's prediction,
            then each length-of-stay objective's interval ends (NaN without an interval; see
            :meth:`interval_summary` for their nominal coverage).

        Raises
        ------
        DataError
            If ``rows`` is not a table, lacks one of :attr:`input_columns`, or holds a value
            that cannot be scored (the message names the column and rows, never a value).
        ConfigError
            If ``unseen_categories`` is not a known policy.
        """
        policy = unseen_categories or self.unseen_categories
        if policy not in UNSEEN_CATEGORY_POLICIES:
            raise ConfigError(
                f"unseen_categories must be one of {', '.join(UNSEEN_CATEGORY_POLICIES)}, "
                f"got {policy!r}"
            )
        fmt = self.row_format()
        features = fmt.features(
            fmt.as_declared(rows), self.input_columns, self.numeric_columns, source, policy
        )
        columns = self.output_columns
        if len(features) == 0:
            return pd.DataFrame({c: pd.Series(dtype=np.float64) for c in columns}, index=rows.index)
        x_common = torch.from_numpy(self.common_encoder.transform(features))
        x_private = torch.from_numpy(self.private_encoder.transform(features))
        with torch.no_grad(), _one_thread():
            out = self.predictor.predictions(x_common, x_private)
        ends = [
            end
            for s in self.regression_objectives
            for end in self.predictor.interval_bounds(out[:, self.objectives.index(s)], s)
        ]
        out = np.column_stack([out, *ends]) if ends else out
        return pd.DataFrame(out, columns=columns, index=rows.index)

    def describe(self) -> dict[str, Any]:
        """The ``package.json`` document (no weights, no rows)."""
        return {
            "format": _PACKAGE_FORMAT,
            "fedcare_version": __version__,
            "dataset": self.dataset,
            "algorithm": self.algorithm,
            "client": self.client_id,
            "objectives": list(self.objectives),
            "inputs": self.input_columns,
            "outputs": self.output_columns,
            "intervals": self.interval_summary(),
            "unseen_categories": self.unseen_categories,
            "encoders": {
                "common": self.common_encoder.to_dict(),
                "private": self.private_encoder.to_dict(),
            },
            "predictor": self.predictor.spec(),
        } | ({} if self.definition is None else {"definition": self.definition})


#: Scoring runs on one torch thread, one call at a time: on some CPUs (an Intel Xeon with
#: AVX-512, 2026-12-02) torch's split of the work over two threads changes the last bit of a
#: score, so a model served by a process with other settings would answer differently.
_SCORING = threading.Lock()


@contextmanager
def _one_thread() -> Iterator[None]:
    with _SCORING:
        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            yield
        finally:
            torch.set_num_threads(before)


def save_package(package: ModelPackage, folder: str | Path) -> Path:
    """Write ``package.json`` and ``weights.pt`` into ``folder`` (created).

    Returns
    -------
    Path
        The folder.
    """
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    (out / PACKAGE_FILE).write_text(json.dumps(package.describe(), indent=2) + "\n")
    torch.save(package.predictor.state_dict(), out / WEIGHTS_FILE)
    return out


def load_package(folder: str | Path) -> ModelPackage:
    """Read a package written by :func:`save_package`.

    Raises
    ------
    ValueError
        If the folder holds another package format, weights that do not fit, or a weights file
        that is not one (anything but tensors is refused: nothing in it is run).
    """
    root = Path(folder)
    doc: Mapping[str, Any] = json.loads((root / PACKAGE_FILE).read_text())
    if doc.get("format") != _PACKAGE_FORMAT:
        raise ValueError(
            f"{root / PACKAGE_FILE}: package format {doc.get('format')!r}; this FedCARE "
            f"({__version__}) reads format {_PACKAGE_FORMAT}"
        )
    try:
        weights = torch.load(root / WEIGHTS_FILE, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:  # weights_only: anything but tensors is refused, never run
        raise ValueError(
            f"{root / WEIGHTS_FILE}: holds objects other than tensors (refused, not loaded)"
        ) from None
    except (RuntimeError, EOFError) as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(f"{root / WEIGHTS_FILE}: not a weights file ({detail})") from None
    return ModelPackage(
        dataset=str(doc["dataset"]),
        algorithm=str(doc["algorithm"]),
        client_id=int(doc["client"]),
        common_encoder=FeatureEncoder.from_dict(doc["encoders"]["common"]),
        private_encoder=FeatureEncoder.from_dict(doc["encoders"]["private"]),
        predictor=predictor_from_spec(doc["predictor"], weights),
        unseen_categories=str(doc["unseen_categories"]),
        definition=None if doc.get("definition") is None else str(doc["definition"]),
    )
