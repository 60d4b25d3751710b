"""Split one Stage 1 local step into its matrix products and everything else.

The step is the one :func:`fedcare_core.stage1.client_update` takes (the SPEC's global model with
one head, a 256-row batch, forward, weighted BCE, ``autograd.grad`` and the SGD update, one
intra-op thread). Its matrix products are then timed on their own, with the same shapes: each
``Linear`` layer's forward ``addmm``, its weight-gradient ``mm`` and, except for the first layer
(the inputs need no gradient), its input-gradient ``mm``. The difference is what a fused
implementation could at best remove: normalisation, activations, dropout masks, the loss, the
autograd engine's bookkeeping and the update. A third variant runs ``--lanes`` clients' steps as
one batched program (``baddbmm`` over stacked weights, per-client BatchNorm statistics, one mask
stream per client, one ``autograd.grad``), the layout a "batch the clients" fast path would use;
its time is given per client. The variants alternate in chunks so that background load hits them
alike; the table gives medians.

Run from anywhere with the project installed::

    python benchmarks/bench_local_step.py [--steps 600] [--width 93] [--lanes 10] [--out results.md]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from step_timing import BATCH, caption, emit, median_ms, sgd_step, single_thread
from torch import nn

from fedcare_core.config import ModelConfig
from fedcare_core.dropout import keep_mask
from fedcare_core.models import MultiObjectiveModel


def _gemm_step(model: MultiObjectiveModel) -> Callable[[], None]:
    layers = [m for m in model.modules() if isinstance(m, nn.Linear)]
    work = []
    for i, layer in enumerate(layers):
        w = layer.weight.detach().clone()
        b = layer.bias.detach().clone()
        x = torch.randn(BATCH, layer.in_features)
        g = torch.randn(BATCH, layer.out_features)
        work.append((w, b, x, g, i > 0))

    def step() -> None:
        for w, b, x, g, needs_input_grad in work:
            torch.addmm(b, x, w.t())
            g.t().mm(x)
            if needs_input_grad:
                g.mm(w)

    return step


def _batched_step(model: MultiObjectiveModel, width: int, lanes: int) -> Callable[[], None]:
    """``lanes`` copies of the model stepped as one program; returns one step of all lanes."""
    cfg = ModelConfig()
    bb = model.backbone
    head = [m for m in model.heads["y"].modules() if isinstance(m, nn.Linear)]
    singles = [
        bb.fc1.weight, bb.fc1.bias, bb.bn1.weight, bb.bn1.bias,
        bb.fc2.weight, bb.fc2.bias, bb.bn2.weight, bb.bn2.bias,
        bb.proj.weight, bb.proj.bias, bb.norm.weight, bb.norm.bias,
        head[0].weight, head[0].bias, head[1].weight, head[1].bias, head[2].weight, head[2].bias,
    ]  # fmt: skip
    params = [p.detach().expand(lanes, *p.shape).clone().requires_grad_() for p in singles]
    x = torch.randn(lanes, BATCH, width)
    y = (torch.rand(lanes, BATCH) > 0.5).float()
    pos_weight = torch.full((lanes, 1), 2.0)
    streams = [np.random.PCG64(i) for i in range(lanes)]

    def mask(width_: int, p: float) -> torch.Tensor:
        return torch.stack([keep_mask((BATCH, width_), p, stream) for stream in streams])

    def lin(h: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.baddbmm(b[:, None, :], h, w.transpose(1, 2))

    def bn(z: torch.Tensor, g: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        mean = z.mean(1, keepdim=True)
        var = z.var(1, unbiased=False, keepdim=True)
        return (z - mean) * torch.rsqrt(var + 1e-5) * g[:, None, :] + b[:, None, :]

    def step() -> None:
        w1, b1, g1, e1, w2, b2, g2, e2, wp, bp, gl, el, wa, ba, wb, bbias, wc, bc = params
        a1 = torch.relu(bn(lin(x, w1, b1), g1, e1)) * mask(cfg.hidden, cfg.dropout)
        a2 = torch.relu(bn(lin(a1, w2, b2), g2, e2)) * mask(cfg.hidden, cfg.dropout)
        rep = lin(a1 + a2, wp, bp)
        rep = F.layer_norm(rep, (cfg.representation,)) * gl[:, None, :] + el[:, None, :]
        h = torch.relu(lin(rep, wa, ba)) * mask(cfg.head_hidden[0], cfg.head_dropout)
        h = torch.relu(lin(h, wb, bbias)) * mask(cfg.head_hidden[1], cfg.head_dropout)
        score = lin(h, wc, bc).squeeze(-1)
        loss = F.binary_cross_entropy_with_logits(score, y, pos_weight=pos_weight, reduction="none")
        grads = torch.autograd.grad(loss.mean(1).sum(), params)
        with torch.no_grad():
            for p, g in zip(params, grads, strict=True):
                p.sub_(1e-3 * g)

    return step


def main() -> int:
    """Print (and optionally write) the Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--width", type=int, default=93, help="common-feature width (Diabetes)")
    parser.add_argument("--lanes", type=int, default=10, help="clients in the batched program")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    single_thread()
    torch.manual_seed(0)
    model = MultiObjectiveModel(args.width, ["y"], ModelConfig()).train()
    steppers = {
        "full": sgd_step(model, args.width),
        "gemm": _gemm_step(model),
        "batched": _batched_step(model, args.width, args.lanes),
    }
    med = median_ms(steppers, args.steps)
    med["batched"] /= args.lanes
    rest = med["full"] - med["gemm"]
    lines = [
        caption(args.width, args.steps),
        "",
        "| part | ms / step | share |",
        "| --- | ---: | ---: |",
        f"| whole step (StreamDropout) | {med['full']:.2f} | 100 % |",
        f"| its matrix products alone | {med['gemm']:.2f} "
        f"| {100 * med['gemm'] / med['full']:.0f} % |",
        f"| everything else | {rest:.2f} | {100 * rest / med['full']:.0f} % |",
        f"| {args.lanes} clients as one batched program, per client | {med['batched']:.2f} "
        f"| {100 * med['batched'] / med['full']:.0f} % |",
    ]
    emit(lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
