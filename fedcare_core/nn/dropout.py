"""Inverted dropout with fast, seeded masks.

``torch.nn.Dropout`` draws one Bernoulli sample per element from torch's Mersenne Twister
(about 15 ns an element on this project's CPUs), which made mask generation the largest single
cost of a training step. :class:`StreamDropout` takes 16-bit uniforms from a PCG64 bit generator
instead, four per raw 64-bit draw (under 1 ns an element), and keeps an element when its uniform
is below ``round((1 - p) * 65536)``: the drop probability is ``p`` quantised to 1/65 536.

The masks come from one process-wide stream, reseeded by :func:`seed_masks` (called by
:func:`fedcare_core.nn.seeding.seed_torch` with the same key as torch's generator), so every client,
objective and round draws its own reproducible masks whatever order they run in.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

#: Resolution of the keep threshold (16-bit uniforms).
_LEVELS = 1 << 16

_stream = np.random.PCG64(0)


def seed_masks(seed: int) -> None:
    """Reseed the process-wide mask stream.

    Parameters
    ----------
    seed
        A non-negative integer (a derived stream seed).
    """
    global _stream
    _stream = np.random.PCG64(seed)


def keep_threshold(p: float) -> int:
    """The 16-bit threshold below which an element is kept, for drop probability ``p``."""
    return round((1.0 - p) * _LEVELS)


def keep_mask(
    shape: tuple[int, ...], p: float, stream: np.random.BitGenerator | None = None
) -> torch.Tensor:
    """A float32 mask of ``0`` (dropped) and ``1 / (1 - p)`` (kept) from the mask stream.

    Parameters
    ----------
    shape
        Shape of the activations to mask.
    p
        Drop probability in ``[0, 1)``.
    stream
        The bit generator to draw from; the process-wide mask stream when omitted.

    Returns
    -------
    torch.Tensor
        The scaled mask, ready to multiply the activations with.
    """
    n = int(np.prod(shape))
    words = (_stream if stream is None else stream).random_raw((n + 3) // 4)
    uniforms = np.asarray(words, dtype=np.uint64).view(np.uint16)[:n]
    mask = (uniforms < keep_threshold(p)).astype(np.float32)
    mask *= np.float32(1.0 / (1.0 - p))
    return torch.from_numpy(mask.reshape(shape))


class StreamDropout(nn.Module):
    """Inverted dropout drawing its masks from the seeded mask stream.

    Parameters
    ----------
    p
        Drop probability in ``[0, 1)``.
    """

    def __init__(self, p: float) -> None:
        super().__init__()
        if not 0.0 <= p < 1.0:
            raise ValueError(f"dropout probability must be in [0, 1), got {p}")
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Mask ``x`` in training mode; identity in evaluation mode or when ``p == 0``."""
        if not self.training or self.p == 0.0:
            return x
        return x * keep_mask(tuple(x.shape), self.p)

    def extra_repr(self) -> str:
        """``p=...`` in the module's printout."""
        return f"p={self.p}"
