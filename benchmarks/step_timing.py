"""What the local-step benchmarks share: the Stage 1 step itself and the alternating timer.

Imported by ``bench_dropout.py`` and ``bench_local_step.py`` (run as scripts, this folder is on
``sys.path``).
"""

from __future__ import annotations

import platform
import statistics
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import torch

from fedcare_core.nn.dropout import seed_masks
from fedcare_core.nn.models import MultiObjectiveModel
from fedcare_core.objectives.losses import WeightedBCE

#: Rows per mini-batch (SPEC §3).
BATCH = 256
#: Steps of one variant before the next takes over.
CHUNK = 50
WARMUP = 20


def single_thread() -> None:
    """One intra-op thread, deterministic kernels, a fixed mask stream: how Stage 1 runs."""
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    seed_masks(0)


def sgd_step(model: MultiObjectiveModel, width: int) -> Callable[[], None]:
    """One local step of ``client_update`` on a random batch: forward, BCE, grad, SGD update.

    Parameters
    ----------
    model
        A model with one head named ``"y"``, in training mode.
    width
        Input width (common features).

    Returns
    -------
    Callable[[], None]
        Takes one step each call.
    """
    params = list(model.parameters())
    x = torch.randn(BATCH, width)
    y = (torch.rand(BATCH) > 0.5).float()
    loss_fn = WeightedBCE("binary", 2.0)

    def step() -> None:
        loss = loss_fn(model(x, "y"), y)
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for p, g in zip(params, grads, strict=True):
                p.sub_(1e-3 * g)

    return step


def median_ms(steppers: Mapping[str, Callable[[], None]], steps: int) -> dict[str, float]:
    """Median milliseconds per call of each stepper, the variants alternating in chunks.

    Parameters
    ----------
    steppers
        Name → a callable taking one step.
    steps
        Steps timed per variant (rounded down to whole chunks, at least one chunk).

    Returns
    -------
    dict[str, float]
        Name → median time of one call, in milliseconds.
    """
    times: dict[str, list[float]] = {k: [] for k in steppers}
    for step in steppers.values():
        for _ in range(WARMUP):
            step()
    for _ in range(max(1, steps // CHUNK)):
        for kind, step in steppers.items():
            for _ in range(CHUNK):
                t0 = time.perf_counter()
                step()
                times[kind].append(time.perf_counter() - t0)
    return {k: statistics.median(v) * 1e3 for k, v in times.items()}


def caption(width: int, steps: int) -> str:
    """The first line of a result table: the setting and the software it was measured on."""
    return (
        f"Stage 1 local step, batch {BATCH}, width {width}, 1 thread; "
        f"torch {torch.__version__}, Python {platform.python_version()}, "
        f"{platform.machine()}; median of {max(1, steps // CHUNK) * CHUNK} steps each."
    )


def emit(lines: list[str], out: Path | None) -> None:
    """Print the table and, when ``out`` is given, write it there too."""
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
