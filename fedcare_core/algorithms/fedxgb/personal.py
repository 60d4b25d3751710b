"""A client's own trees on all its features, stacked on the federation's margin (fedxgb).

The federated ensembles read the common features only. Each client then boosts up to
``fedxgb_personal_trees`` trees of its own on ``[x_c, x_u]`` (its private features too),
starting from the federated margin (XGBoost's ``base_margin``), early-stopped on its validation
rows; it keeps them only if they lower its validation loss below the federated model's. Nothing
of this step leaves the client.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import xgboost as xgb

from fedcare_core.algorithms.fedxgb.options import FedXgbOptions
from fedcare_core.algorithms.fedxgb.trees import Ensemble, TreeSettings, margin_loss, target
from fedcare_core.config import BaselineConfig
from fedcare_core.data.clients import ClientData, SplitArrays

__all__ = ["EARLY_STOPPING", "personal_boosters", "stacked_features"]

#: Trees without a validation improvement that end a client's own boosting.
EARLY_STOPPING = 10


def stacked_features(split: SplitArrays) -> np.ndarray:
    """``[x_c, x_u]``: what a client's own trees read."""
    return np.hstack([split.x_common, split.x_private]).astype(np.float32)


def _matrix(
    split: SplitArrays, j: int, kind: str, ensemble: Ensemble
) -> tuple[xgb.DMatrix, np.ndarray, np.ndarray] | None:
    ok = np.isfinite(split.y[:, j])
    if not ok.any():
        return None
    rows = split.take(np.flatnonzero(ok))
    margin = ensemble.margin(rows.x_common)
    y = target(kind, rows.y[:, j])
    return xgb.DMatrix(stacked_features(rows), label=y, base_margin=margin, nthread=1), y, margin


def personal_boosters(
    client: ClientData,
    ensembles: Mapping[str, Ensemble],
    kinds: Mapping[str, str],
    base: BaselineConfig,
    seed: int,
) -> dict[str, bytes]:
    """The client's own trees per objective it pursues (absent: none kept), as UBJSON.

    Parameters
    ----------
    client
        The client (training rows fit, validation rows stop and decide).
    ensembles
        The federated ensembles, by objective.
    kinds
        Objective kinds.
    base
        ``fedxgb_personal_trees``, ``fedxgb_eta``, ``fedxgb_depth``.
    seed
        XGBoost's seed.
    """
    out: dict[str, bytes] = {}
    options = FedXgbOptions.of(base)
    if options.fedxgb_personal_trees == 0:
        return out
    for j, objective in enumerate(client.objectives):
        ensemble, kind = ensembles.get(objective), kinds[objective]
        if ensemble is None:
            continue
        train = _matrix(client.train, j, kind, ensemble)
        val = _matrix(client.val, j, kind, ensemble)
        if train is None or val is None:
            continue
        settings = TreeSettings(kind, options.fedxgb_eta, options.fedxgb_depth, seed)
        booster = xgb.train(
            settings.params(),
            train[0],
            num_boost_round=options.fedxgb_personal_trees,
            evals=[(val[0], "val")],
            early_stopping_rounds=EARLY_STOPPING,
            verbose_eval=False,
        )
        kept = booster[: booster.best_iteration + 1]
        stacked = kept.predict(val[0], output_margin=True).astype(np.float64)
        if margin_loss(kind, val[1], stacked) < margin_loss(kind, val[1], val[2]):
            out[objective] = bytes(kept.save_raw("ubj"))
    return out
