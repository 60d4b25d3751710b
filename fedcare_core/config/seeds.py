"""Deterministic seed derivation: every random stream is keyed by what it is for.

Keys such as ``(seed, "stage1", round, client, objective)`` make each client's randomness
independent of the order clients are run in, so in-process and federated backends agree.
Torch's generators are seeded from these by :func:`fedcare_core.nn.seeding.seed_torch`.
"""

from __future__ import annotations

import zlib

import numpy as np


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
