"""PAFNet's client model: a projection, a masked shared network, the client's masks.

Each client maps its own encoded features into a common latent space (a projection that never
leaves it) and uses every weight matrix of the shared network through a client-owned mask.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch
from torch import nn
from torch.func import functional_call

from fedcare_core.config import ModelConfig
from fedcare_core.data.clients import SplitArrays
from fedcare_core.nn.models import MultiObjectiveModel

__all__ = ["PafnetClientModel", "own_features"]


def _mask_values(scores: torch.Tensor) -> torch.Tensor:
    """Mask multipliers ``2·sigmoid(s)`` in (0, 2); a score of 0 is the identity."""
    return 2.0 * torch.sigmoid(scores)


class PafnetClientModel(nn.Module):
    """One client's PAFNet model: projection, masked shared network, client-owned masks.

    Parameters
    ----------
    in_dim
        Width of the client's own encoded features ``[x_c, x_u,k]``.
    objectives
        Every objective of the federation (the shared network has a head for each).
    own_objectives
        The client's objectives (their heads are masked and trained).
    config
        Shared network widths.
    latent
        Width L of the common latent space.
    mask_init
        Initial mask score.
    """

    def __init__(
        self,
        in_dim: int,
        objectives: Sequence[str],
        own_objectives: Sequence[str],
        config: ModelConfig,
        latent: int,
        mask_init: float = 0.0,
    ) -> None:
        super().__init__()
        self.own_objectives = tuple(own_objectives)
        self.in_dim = in_dim
        self.projection = nn.Sequential(nn.Linear(in_dim, latent), nn.LayerNorm(latent))
        self.body = MultiObjectiveModel(latent, objectives, config)
        masked = [
            (n, p)
            for n, p in self.body.named_parameters()
            if p.ndim == 2 and (n.startswith("backbone.") or n.split(".")[1] in own_objectives)
        ]
        self.mask_names = tuple(n for n, _ in masked)
        self.mask_scores = nn.ParameterList(
            [nn.Parameter(torch.full_like(p.detach(), mask_init)) for _, p in masked]
        )

    def masked_weights(self) -> dict[str, torch.Tensor]:
        """Shared-network parameter name → ``W ⊙ m_k`` for every masked weight."""
        shared = dict(self.body.named_parameters())
        return {
            n: shared[n] * _mask_values(s)
            for n, s in zip(self.mask_names, self.mask_scores, strict=True)
        }

    def forward_all(self, x: torch.Tensor, objectives: Sequence[str]) -> dict[str, torch.Tensor]:
        """Raw scores of each of ``objectives`` for the client's own features ``x``."""
        weights = self.masked_weights()
        z = self.projection(x)
        h = functional_call(self.body.backbone, _under(weights, "backbone."), (z,))
        return {
            s: functional_call(self.body.heads[s], _under(weights, f"heads.{s}."), (h,))
            for s in objectives
        }

    def forward(self, x: torch.Tensor, objective: str) -> torch.Tensor:
        """Raw score of ``objective``."""
        return self.forward_all(x, (objective,))[objective]


def _under(weights: Mapping[str, torch.Tensor], prefix: str) -> dict[str, torch.Tensor]:
    return {n[len(prefix) :]: w for n, w in weights.items() if n.startswith(prefix)}


def own_features(split: SplitArrays) -> np.ndarray:
    """A client's own encoded features ``[x_c, x_u,k]`` (the projection's input)."""
    return np.concatenate([split.x_common, split.x_private], axis=1)
