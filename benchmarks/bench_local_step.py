"""Split one Stage 1 local step into its matrix products and everything else.

The step is the one :func:`fedcare_core.stage1.loop.client_update` takes (the SPEC's global model
with one head, a 256-row batch, forward, weighted BCE, ``autograd.grad`` and the SGD update, one
intra-op thread). Its matrix products are then timed on their own, with the same shapes: each
``Linear`` layer's forward ``addmm``, its weight-gradient ``mm`` and, except for the first layer
(the inputs need no gradient), its input-gradient ``mm``. The difference is what a fused
implementation could at best remove: normalisation, activations, dropout masks, the loss, the
autograd engine's bookkeeping and the update. A third variant runs ``--lanes`` clients' steps as
one batched program (``baddbmm`` over stacked weights, per-client BatchNorm statistics, one mask
stream per client, one ``autograd.grad``), the layout a "batch the clients" fast path would use;
its time is given per client. A fourth writes the step's backward pass by hand (no autograd: the
BatchNorm, LayerNorm, ReLU, dropout and loss derivatives as tensor expressions, ReLU and dropout
folded into one saved multiplier), checked against autograd's gradients before it is timed: what
dropping the autograd engine, but not torch's per-operation dispatch, would give. The variants
alternate in chunks so that background load hits them alike; the table gives medians.

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
from fedcare_core.nn.dropout import keep_mask
from fedcare_core.nn.models import MultiObjectiveModel


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


def _model_params(model: MultiObjectiveModel) -> list[torch.Tensor]:
    """The step's 18 parameter tensors, in the order the hand-written programs unpack them."""
    bb = model.backbone
    head = [m for m in model.heads["y"].modules() if isinstance(m, nn.Linear)]
    return [
        bb.fc1.weight, bb.fc1.bias, bb.bn1.weight, bb.bn1.bias,
        bb.fc2.weight, bb.fc2.bias, bb.bn2.weight, bb.bn2.bias,
        bb.proj.weight, bb.proj.bias, bb.norm.weight, bb.norm.bias,
        head[0].weight, head[0].bias, head[1].weight, head[1].bias, head[2].weight, head[2].bias,
    ]  # fmt: skip


def _mask_shapes() -> list[tuple[int, float]]:
    """(width, drop probability) of the step's four dropout layers, in forward order."""
    cfg = ModelConfig()
    return [
        (cfg.hidden, cfg.dropout),
        (cfg.hidden, cfg.dropout),
        (cfg.head_hidden[0], cfg.head_dropout),
        (cfg.head_hidden[1], cfg.head_dropout),
    ]


def _batched_step(model: MultiObjectiveModel, width: int, lanes: int) -> Callable[[], None]:
    """``lanes`` copies of the model stepped as one program; returns one step of all lanes."""
    cfg = ModelConfig()
    singles = _model_params(model)
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


def _bn_forward(z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    centred = z - z.mean(0)
    rstd = torch.rsqrt(centred.square().mean(0) + 1e-5)
    return centred * rstd, rstd


def _norm_backward(
    dxhat: torch.Tensor, xhat: torch.Tensor, rstd: torch.Tensor, dim: int
) -> torch.Tensor:
    """Gradient through ``xhat = (z − mean) · rstd`` over ``dim`` (BatchNorm 0, LayerNorm 1)."""
    n = dxhat.shape[dim]
    s1 = dxhat.sum(dim, keepdim=True)
    s2 = (dxhat * xhat).sum(dim, keepdim=True)
    return (dxhat - s1 / n - xhat * (s2 / n)) * rstd


def _manual_grads(
    params: list[torch.Tensor], x: torch.Tensor, y: torch.Tensor, masks: list[torch.Tensor]
) -> list[torch.Tensor]:
    """Gradients of the step's weighted BCE (``pos_weight`` 2) without autograd."""
    w1, b1, g1, e1, w2, b2, g2, e2, wp, bp, gl, el, wa, ba, wb, bb, wc, bc = params
    m1, m2, ma, mb = masks
    xh1, r1 = _bn_forward(torch.addmm(b1, x, w1.t()))
    y1 = torch.addcmul(e1, xh1, g1)
    k1 = (y1 > 0) * m1  # ReLU and dropout as one multiplier
    a1 = y1 * k1
    xh2, r2 = _bn_forward(torch.addmm(b2, a1, w2.t()))
    y2 = torch.addcmul(e2, xh2, g2)
    k2 = (y2 > 0) * m2
    res = a1 + y2 * k2
    zp = torch.addmm(bp, res, wp.t())
    centred = zp - zp.mean(1, keepdim=True)
    rstd = torch.rsqrt(centred.square().mean(1, keepdim=True) + 1e-5)
    xhp = centred * rstd
    rep = torch.addcmul(el, xhp, gl)
    za = torch.addmm(ba, rep, wa.t())
    ka = (za > 0) * ma
    ha = za * ka
    zb = torch.addmm(bb, ha, wb.t())
    kb = (zb > 0) * mb
    hb = zb * kb
    sig = torch.sigmoid(torch.addmm(bc, hb, wc.t()))
    ds = ((1 - y) * sig - 2.0 * y * (1 - sig)) / x.shape[0]
    dzb = ds.mm(wc) * kb
    dza = dzb.mm(wb) * ka
    drep = dza.mm(wa)
    dzp = _norm_backward(drep * gl, xhp, rstd, 1)
    dres = dzp.mm(wp)
    dy2 = dres * k2
    dz2 = _norm_backward(dy2 * g2, xh2, r2, 0)
    dy1 = (dres + dz2.mm(w2)) * k1
    dz1 = _norm_backward(dy1 * g1, xh1, r1, 0)
    return [
        dz1.t().mm(x), dz1.sum(0), (dy1 * xh1).sum(0), dy1.sum(0),
        dz2.t().mm(a1), dz2.sum(0), (dy2 * xh2).sum(0), dy2.sum(0),
        dzp.t().mm(res), dzp.sum(0), (drep * xhp).sum(0), drep.sum(0),
        dza.t().mm(rep), dza.sum(0), dzb.t().mm(ha), dzb.sum(0), ds.t().mm(hb), ds.sum(0),
    ]  # fmt: skip


def _check_manual_grads(model: MultiObjectiveModel, width: int) -> float:
    """Largest difference between the hand-written and autograd gradients, on one batch."""
    cfg = ModelConfig()
    params = _model_params(model)
    x = torch.randn(BATCH, width)
    y = (torch.rand(BATCH) > 0.5).float()
    masks = [
        keep_mask((BATCH, w), p, np.random.PCG64(i)) for i, (w, p) in enumerate(_mask_shapes())
    ]
    w1, b1, g1, e1, w2, b2, g2, e2, wp, bp, gl, el, wa, ba, wb, bb, wc, bc = params
    a1 = torch.relu(F.batch_norm(F.linear(x, w1, b1), None, None, g1, e1, True)) * masks[0]
    a2 = torch.relu(F.batch_norm(F.linear(a1, w2, b2), None, None, g2, e2, True)) * masks[1]
    rep = F.layer_norm(F.linear(a1 + a2, wp, bp), (cfg.representation,), gl, el)
    h = torch.relu(F.linear(torch.relu(F.linear(rep, wa, ba)) * masks[2], wb, bb)) * masks[3]
    score = F.linear(h, wc, bc).squeeze(-1)
    loss = F.binary_cross_entropy_with_logits(score, y, pos_weight=torch.tensor(2.0))
    auto = torch.autograd.grad(loss, params)
    with torch.no_grad():
        hand = _manual_grads([p.detach() for p in params], x, y[:, None], masks)
    return max(float((a - b).abs().max()) for a, b in zip(auto, hand, strict=True))


def _manual_step(model: MultiObjectiveModel, width: int) -> Callable[[], None]:
    params = [p.detach().clone() for p in _model_params(model)]
    x = torch.randn(BATCH, width)
    y = (torch.rand(BATCH, 1) > 0.5).float()
    shapes = _mask_shapes()

    def step() -> None:
        masks = [keep_mask((BATCH, w), p) for w, p in shapes]
        grads = _manual_grads(params, x, y, masks)
        torch._foreach_sub_(params, torch._foreach_mul(grads, 1e-3))

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
        "manual": _manual_step(model, args.width),
    }
    max_diff = _check_manual_grads(model, args.width)
    if max_diff > 1e-5:
        raise SystemExit(f"hand-written gradients differ from autograd's by {max_diff:.2e}")
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
        f"| backward by hand, no autograd (gradients within {max_diff:.0e} of autograd's) "
        f"| {med['manual']:.2f} | {100 * med['manual'] / med['full']:.0f} % |",
    ]
    emit(lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
