"""Networks of SPEC §2: backbone, objective heads, personal heads and FullMLP.

Heads output raw scores; the output activation (Sigmoid for binary objectives, Softplus for LOS)
is each objective kind's (:mod:`fedcare_core.objectives`), so that the binary loss can use the
numerically stable ``BCEWithLogits`` form. ``predict`` returns probabilities and days.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from torch import nn

from fedcare_core.config import ModelConfig
from fedcare_core.nn.dropout import StreamDropout


class Backbone(nn.Module):
    """Shared representation ``h = f(x_c)``.

    ``Linear(d,128) → BN → ReLU → Dropout → [+residual] Linear(128,128) → BN → ReLU → Dropout →
    Linear(128,64) → LayerNorm``; the residual adds the first hidden layer to the second's output.
    """

    def __init__(self, in_dim: int, config: ModelConfig | None = None) -> None:
        super().__init__()
        cfg = config or ModelConfig()
        self.in_dim = in_dim
        self.fc1 = nn.Linear(in_dim, cfg.hidden)
        self.bn1 = nn.BatchNorm1d(cfg.hidden)
        self.fc2 = nn.Linear(cfg.hidden, cfg.hidden)
        self.bn2 = nn.BatchNorm1d(cfg.hidden)
        self.drop = StreamDropout(cfg.dropout)
        self.proj = nn.Linear(cfg.hidden, cfg.representation)
        self.norm = nn.LayerNorm(cfg.representation)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Map ``(n, d_c)`` inputs to ``(n, 64)`` representations."""
        h1 = self.drop(torch.relu(self.bn1(self.fc1(x))))
        h2 = self.drop(torch.relu(self.bn2(self.fc2(h1))))
        out: torch.Tensor = self.norm(self.proj(h1 + h2))
        return out


class Head(nn.Module):
    """``in → 64 → 32 → 1`` with ReLU and Dropout; returns the raw score (n,)."""

    def __init__(self, in_dim: int, config: ModelConfig | None = None) -> None:
        super().__init__()
        cfg = config or ModelConfig()
        h1, h2 = cfg.head_hidden
        self.net = nn.Sequential(
            nn.Linear(in_dim, h1),
            nn.ReLU(),
            StreamDropout(cfg.head_dropout),
            nn.Linear(h1, h2),
            nn.ReLU(),
            StreamDropout(cfg.head_dropout),
            nn.Linear(h2, 1),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Raw score per row."""
        out: torch.Tensor = self.net(x).squeeze(-1)
        return out


class MultiObjectiveModel(nn.Module):
    """Stage 1's global model ``w``: a backbone plus one head per objective."""

    def __init__(
        self, in_dim: int, objectives: Sequence[str], config: ModelConfig | None = None
    ) -> None:
        super().__init__()
        cfg = config or ModelConfig()
        self.objectives = tuple(objectives)
        self.backbone = Backbone(in_dim, cfg)
        self.heads = nn.ModuleDict({s: Head(cfg.representation, cfg) for s in self.objectives})

    def forward(self, x: torch.Tensor, objective: str) -> torch.Tensor:
        """Raw score of ``objective`` for inputs ``x``."""
        out: torch.Tensor = self.heads[objective](self.backbone(x))
        return out


class PersonalModel(nn.Module):
    """Stage 2's personalised model ``φ_k``.

    The backbone and a head per client objective that reads ``[h(x_c), x_u]`` (64 + d_u inputs).
    """

    def __init__(
        self,
        in_dim: int,
        private_dim: int,
        objectives: Sequence[str],
        config: ModelConfig | None = None,
    ) -> None:
        super().__init__()
        cfg = config or ModelConfig()
        self.objectives = tuple(objectives)
        self.private_dim = private_dim
        self.backbone = Backbone(in_dim, cfg)
        self.heads = nn.ModuleDict(
            {s: Head(cfg.representation + private_dim, cfg) for s in self.objectives}
        )

    def forward(
        self, x_common: torch.Tensor, x_private: torch.Tensor, objective: str
    ) -> torch.Tensor:
        """Raw score of ``objective``."""
        h = self.backbone(x_common)
        out: torch.Tensor = self.heads[objective](torch.cat([h, x_private], dim=1))
        return out

    def load_backbone(self, state: Mapping[str, torch.Tensor]) -> None:
        """Initialise the backbone from a Stage 1 backbone state dict (eq. 12)."""
        self.backbone.load_state_dict(state)


class FullMLP(MultiObjectiveModel):
    """The baselines' single network over the union-sized, zero-padded feature vector."""
