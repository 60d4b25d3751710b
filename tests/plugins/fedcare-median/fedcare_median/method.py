"""FedMedian (Yin et al., 2018): FedAvg's rounds, the server step a coordinate-wise median.

A robust aggregate: each coordinate of ``w^{t+1}`` is the median of the clients' values, so
one client's outlying update moves it no further than the others allow. A head is the median
over the clients that pursue its objective. Everything else (the union view, local training,
Flower's messages, the deployed FullMLP) is FedAvg's, inherited.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fedcare_core.algorithms.fedavg.method import FedAvg
from fedcare_core.algorithms.fedavg.rounds import LocalUpdate
from fedcare_core.nn.param_vectors import ParamLayout


class FedMedian(FedAvg):
    """FedAvg with the coordinate-wise median as its server step (no DP: the median is not
    the clipped Gaussian sum the accountant prices)."""

    name = "fedmedian"
    private_rounds = False

    def aggregate(
        self,
        params: np.ndarray,
        buffers: np.ndarray,
        updates: Sequence[LocalUpdate],
        layout: ParamLayout,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The coordinate-wise median of the replying clients' models and statistics."""
        if not updates:
            return params.copy(), buffers.copy()
        out = params.astype(np.float64)
        out[layout.backbone] = _median([u.params[layout.backbone] for u in updates])
        for objective, block in layout.heads.items():
            movers = [u.params[block] for u in updates if u.objective_examples.get(objective)]
            if movers:
                out[block] = _median(movers)
        stats = _median([u.buffers for u in updates]) if buffers.size else buffers
        return out.astype(np.float32), np.asarray(stats, dtype=np.float32)


def _median(vectors: Sequence[np.ndarray]) -> np.ndarray:
    return np.median(np.stack([v.astype(np.float64) for v in vectors]), axis=0)
