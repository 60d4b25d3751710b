"""Time one Stage 1 local step with torch's Dropout, FedCARE's StreamDropout, and no dropout.

The step is the one :func:`fedcare_core.stage1.client_update` takes: the SPEC's global model
(backbone + one head) on a 256-row batch of ``--width`` inputs, forward, weighted BCE,
``autograd.grad`` and the SGD update, on one intra-op thread. The three variants alternate in
chunks so that background load hits them alike; the table gives the median time per step.

Run from anywhere with the project installed::

    python benchmarks/bench_dropout.py [--steps 600] [--width 93] [--out results.md]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

from fedcare_core.config import ModelConfig
from fedcare_core.dropout import StreamDropout, seed_masks
from fedcare_core.losses import ObjectiveLoss
from fedcare_core.models import MultiObjectiveModel

BATCH = 256
CHUNK = 50


def _model(kind: str, width: int) -> MultiObjectiveModel:
    torch.manual_seed(0)
    model = MultiObjectiveModel(width, ["y"], ModelConfig())
    for module in list(model.modules()):
        for name, child in list(module.named_children()):
            if isinstance(child, StreamDropout):
                if kind == "torch":
                    setattr(module, name, nn.Dropout(child.p))
                elif kind == "none":
                    setattr(module, name, nn.Identity())
    return model.train()


def _stepper(kind: str, width: int) -> Callable[[], None]:
    model = _model(kind, width)
    params = list(model.parameters())
    x = torch.randn(BATCH, width)
    y = (torch.rand(BATCH) > 0.5).float()
    loss_fn = ObjectiveLoss("binary", 2.0)

    def step() -> None:
        loss = loss_fn(model(x, "y"), y)
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for p, g in zip(params, grads, strict=True):
                p.sub_(1e-3 * g)

    return step


def main() -> int:
    """Print (and optionally write) the Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--width", type=int, default=93, help="common-feature width (Diabetes)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    seed_masks(0)
    kinds = ("torch", "stream", "none")
    steppers = {k: _stepper(k, args.width) for k in kinds}
    times: dict[str, list[float]] = {k: [] for k in kinds}
    for step in steppers.values():
        for _ in range(20):
            step()
    for _ in range(max(1, args.steps // CHUNK)):
        for kind in kinds:
            step = steppers[kind]
            for _ in range(CHUNK):
                t0 = time.perf_counter()
                step()
                times[kind].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    lines = [
        f"Stage 1 local step, batch {BATCH}, width {args.width}, 1 thread; "
        f"torch {torch.__version__}, Python {platform.python_version()}, "
        f"{platform.machine()}; median of {len(times['torch'])} steps each.",
        "",
        "| dropout | ms / step | vs torch |",
        "| --- | ---: | ---: |",
    ]
    labels = {"torch": "torch.nn.Dropout", "stream": "StreamDropout", "none": "none (off)"}
    for kind in kinds:
        lines.append(f"| {labels[kind]} | {med[kind]:.2f} | {med['torch'] / med[kind]:.2f}× |")
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
