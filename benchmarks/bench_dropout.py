"""Time one Stage 1 local step with torch's Dropout, FedCARE's StreamDropout, and no dropout.

The step is the one :func:`fedcare_core.stage1.loop.client_update` takes: the SPEC's global model
(backbone + one head) on a 256-row batch of ``--width`` inputs, forward, weighted BCE,
``autograd.grad`` and the SGD update, on one intra-op thread. The three variants alternate in
chunks so that background load hits them alike; the table gives the median time per step.

Run from anywhere with the project installed::

    python benchmarks/bench_dropout.py [--steps 600] [--width 93] [--out results.md]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
from step_timing import caption, emit, median_ms, sgd_step, single_thread
from torch import nn

from fedcare_core.config import ModelConfig
from fedcare_core.nn.dropout import StreamDropout
from fedcare_core.nn.models import MultiObjectiveModel


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


def main() -> int:
    """Print (and optionally write) the Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--width", type=int, default=93, help="common-feature width (Diabetes)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    single_thread()
    kinds = ("torch", "stream", "none")
    med = median_ms({k: sgd_step(_model(k, args.width), args.width) for k in kinds}, args.steps)
    lines = [
        caption(args.width, args.steps),
        "",
        "| dropout | ms / step | vs torch |",
        "| --- | ---: | ---: |",
    ]
    labels = {"torch": "torch.nn.Dropout", "stream": "StreamDropout", "none": "none (off)"}
    for kind in kinds:
        lines.append(f"| {labels[kind]} | {med[kind]:.2f} | {med['torch'] / med[kind]:.2f}× |")
    emit(lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
