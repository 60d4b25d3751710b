"""Seeding torch's CPU generator and the dropout masks for a named stream.

The stream's seed is :func:`fedcare_core.config.seeds.derive_seed`'s (every random stream is
keyed by what it is for, so in-process and federated backends agree).
"""

from __future__ import annotations

import torch

from fedcare_core.config.seeds import derive_seed
from fedcare_core.nn.dropout import seed_masks


def seed_torch(seed: int, *parts: object) -> None:
    """Seed torch's global CPU RNG and the dropout mask stream for the stream named by ``parts``."""
    # The default generator alone: torch.manual_seed also walks every accelerator backend,
    # ~300x slower, and this runs once per client, objective and round.
    derived = derive_seed(seed, *parts)
    torch.default_generator.manual_seed(derived)
    seed_masks(derived)
