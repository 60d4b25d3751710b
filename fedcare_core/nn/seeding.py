"""Deterministic seed derivation: every random stream is keyed by what it is for.

Keys such as ``(seed, "stage1", round, client, objective)`` make each client's randomness
independent of the order clients are run in, so in-process and federated backends agree.
"""

from __future__ import annotations

import zlib

import numpy as np
import torch

from fedcare_core.nn.dropout import seed_masks


def _key(parts: tuple[object, ...]) -> list[int]:
    out: list[int] = []
    for p in parts:
        if isinstance(p, bool | int | np.integer):
            out.append(int(p) & 0xFFFFFFFF)
        else:
            out.append(zlib.crc32(str(p).encode()))
    return out


def derive_seed(seed: int, *parts: object) -> int:
    """A 63-bit integer seed derived from ``seed`` and a key."""
    ss = np.random.SeedSequence([int(seed) & 0xFFFFFFFF, *_key(parts)])
    return int(
        ss.generate_state(2, dtype=np.uint32).astype(np.uint64)
        @ np.array([1 << 32, 1], dtype=np.uint64)
        & np.uint64((1 << 63) - 1)
    )


def derive_rng(seed: int, *parts: object) -> np.random.Generator:
    """A numpy generator for the stream named by ``parts``."""
    return np.random.default_rng(derive_seed(seed, *parts))


def seed_torch(seed: int, *parts: object) -> None:
    """Seed torch's global CPU RNG and the dropout mask stream for the stream named by ``parts``."""
    # The default generator alone: torch.manual_seed also walks every accelerator backend,
    # ~300x slower, and this runs once per client, objective and round.
    derived = derive_seed(seed, *parts)
    torch.default_generator.manual_seed(derived)
    seed_masks(derived)
