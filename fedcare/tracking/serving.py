"""The Stage 1 backbone as a single-tensor model, for MLflow's PyTorch flavour.

MLflow serves a PyTorch model that maps one float tensor to one tensor, and its default
``pt2`` format (``torch.export``; no pickle, so loading needs no FedCARE code) traces such a
forward. The core model takes an objective name, so the logged backbone is this wrapper: one
row of encoded common features in, one column of predictions per objective out (probabilities
for binary objectives, days for length of stay). Each client's deployed model is logged over
raw rows instead (:mod:`fedcare.tracking.client_models`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch
from mlflow.models import ModelSignature, infer_signature
from torch import nn

from fedcare_core.nn.models import MultiObjectiveModel
from fedcare_core.objectives import predict


def _stack(scores: Sequence[torch.Tensor], kinds: Sequence[str]) -> torch.Tensor:
    return torch.stack([predict(k, z) for z, k in zip(scores, kinds, strict=True)], dim=1)


class GlobalPredictor(nn.Module):
    """The Stage 1 model ``w*``: ``(n, d_c)`` encoded common features → ``(n, S)`` predictions.

    Parameters
    ----------
    model
        The global model (backbone and one head per objective), in evaluation mode.
    kinds
        Objective name → its kind (:mod:`fedcare_core.objectives`), for each objective of it.
    """

    def __init__(self, model: MultiObjectiveModel, kinds: Mapping[str, str]) -> None:
        super().__init__()
        self.model = model
        self.objectives = tuple(model.objectives)
        self.kinds = tuple(kinds[s] for s in self.objectives)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """One column per objective, in ``self.objectives`` order."""
        return _stack([self.model(x, s) for s in self.objectives], self.kinds)


def input_example(width: int) -> np.ndarray:
    """A synthetic ``(2, width)`` float32 example: a row of zeros and a row of ones.

    Never real rows: a logged example is stored with the model. Two rows keep the exported
    batch dimension dynamic (``torch.export`` fixes a size-1 dimension).
    """
    return np.vstack([np.zeros(width), np.ones(width)]).astype(np.float32)


def signature_for(model: nn.Module, example: np.ndarray) -> ModelSignature:
    """Infer the tensor signature (``(-1, width)`` → ``(-1, S)``) by running ``example``."""
    model.eval()
    with torch.no_grad():
        out = model(torch.from_numpy(example)).numpy()
    return infer_signature(example, out)
