"""Which round a PAFNet client deploys; its validation rows scored by rounds they did not choose.

Every round runs (no patience); each client keeps the state of its lowest validation loss
(``pafnet_deploy = "best-val"``) and, for its calibration, each validation row's prediction by
the round the other folds' loss kept (:mod:`fedcare_core.nn.cross_fit`).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

import numpy as np
import torch

from fedcare_core.algorithms.pafnet.model import PafnetClientModel, own_features
from fedcare_core.algorithms.pafnet.options import PafnetOptions
from fedcare_core.config import BaselineConfig
from fedcare_core.data.clients import ClientData, SplitArrays
from fedcare_core.nn.cross_fit import FoldSelection, validation_folds
from fedcare_core.nn.training import (
    KeepBest,
    client_losses,
    loss_groups,
    masked_objective_losses,
)
from fedcare_core.objectives import predict

__all__ = ["KeptRound", "validation_loss"]


class KeptRound:
    """A client's best-validation round, and (deploying it) its cross-fitted validation rows."""

    def __init__(
        self,
        model: PafnetClientModel,
        client: ClientData,
        kinds: Mapping[str, str],
        seed: int,
        config: BaselineConfig,
    ) -> None:
        self.model, self.client, self.kinds = model, client, kinds
        self.keep = KeepBest(model, None, has_validation=client.val.n > 0)
        self.best_val = PafnetOptions.of(config).pafnet_deploy == "best-val"
        folds = validation_folds(client.val, seed, client.client_id) if self.best_val else []
        self.folds = FoldSelection(model, folds) if folds else None

    def record(self, round_idx: int) -> None:
        """Score the client's model after round ``round_idx`` on its validation rows."""
        m, c, kinds = self.model, self.client, self.kinds
        self.keep.update(round_idx, validation_loss(m, c, kinds))
        if self.folds is not None:
            self.folds.update_by(c.val, partial(validation_loss, m, c, kinds))

    def deploy(self) -> dict[str, np.ndarray]:
        """Load the deployed round (``pafnet_deploy``); return the cross-fitted predictions."""
        m, c = self.model, self.client
        outputs = {}
        if self.folds is not None:
            outputs = self.folds.out_of_fold(c.val, partial(_predictions, m, c, self.kinds))
        if self.best_val:
            self.keep.restore()
        return outputs


def _predictions(
    model: PafnetClientModel, client: ClientData, kinds: Mapping[str, str], rows: SplitArrays
) -> dict[str, np.ndarray]:
    """The model's predictions of ``rows`` for each of the client's objectives (float64)."""
    with torch.no_grad():
        scores = model.forward_all(torch.from_numpy(own_features(rows)), client.objectives)
    return {s: predict(kinds[s], v).numpy().astype(np.float64) for s, v in scores.items()}


def validation_loss(
    model: PafnetClientModel,
    client: ClientData,
    kinds: Mapping[str, str],
    split: SplitArrays | None = None,
) -> float:
    """Sum over the client's objectives of its mean loss on ``split`` (default: validation)."""
    split = client.val if split is None else split
    if split.n == 0:
        return float("nan")
    losses = client_losses(client, kinds)
    y = torch.from_numpy(split.y)
    model.eval()
    with torch.no_grad():
        scores = model.forward_all(torch.from_numpy(own_features(split)), client.objectives)
        parts = masked_objective_losses(
            client.objectives,
            y,
            losses,
            lambda s, mask: scores[s][mask],
            loss_groups(losses, split),
        )
    return float(sum(float(v) for v in parts.values()))
