"""PAFNet (Molaei et al., personalised attention-based federated network), as adapted here.

The published description (and the FedCARE paper's summary of it) names three mechanisms; this
module implements each on tabular rows, with every open choice recorded in ``docs/DESIGN.md``:

1. **Client-specific projection layers** — each client maps its *own* encoded features
   ``[x_c, x_u,k]`` (no zero padding) into a common latent space:
   ``Linear(d_k, L) → LayerNorm``. Projections never leave the client.
2. **Trainable parameter masks** — every weight matrix ``W`` of the shared network (backbone
   and the client's heads) is used as ``W ⊙ m_k`` with ``m_k = 2·sigmoid(s_k)`` a client-owned,
   trainable, element-wise mask. ``s_k = 0`` (the default start) gives ``m_k = 1``, the global
   model itself; masks never leave the client.
3. **Peer-attentive aggregation** — the server keeps one aggregate per client:
   ``w̄_k = α w_k + Σ_{j≠k} a_{kj} w_j`` with ``a_{kj} ∝ N_j · exp(cos(Δ_k, Δ_j) / T)``
   (summing to 1 − α) over the clients' round updates ``Δ_j``, so clients whose training moves
   the shared network the same way — functionally similar clients — weigh more. A head is
   averaged over the clients that pursue its objective only (weights renormalised over them).

The shared network is the FullMLP shape over the latent space (backbone + one head per
objective). Each client deploys its own model — projection, masks and shared weights — as it
stood after the round of local training with its lowest validation loss (``pafnet_deploy =
"best-val"``, the rule FedCARE's Stage 2 and the bounds follow) or after the last round.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch

from fedcare_core.algorithms.pafnet.model import PafnetClientModel, own_features
from fedcare_core.algorithms.pafnet.options import PafnetOptions
from fedcare_core.algorithms.pafnet.selection import KeptRound
from fedcare_core.algorithms.union.common import (
    build_full_mlp,
    make_optimizer,
    train_on_batches,
    trained_parameters,
)
from fedcare_core.algorithms.union.updates import LocalUpdate, objective_round_losses
from fedcare_core.config import BaselineConfig, ModelConfig
from fedcare_core.config.seeds import derive_rng
from fedcare_core.data.clients import ClientData, Federation
from fedcare_core.nn.param_vectors import (
    ParamLayout,
    get_buffers,
    get_params,
    param_layout,
    set_buffers,
    set_params,
)
from fedcare_core.nn.seeding import seed_torch
from fedcare_core.nn.training import (
    ProgressFn,
    batch_schedule,
    client_losses,
    loss_groups,
    masked_objective_losses,
    objective_kinds,
    take_groups,
)
from fedcare_core.stage1.loop import RoundInfo, Stage1Result

#: Norms below this count as "no update" when computing cosine similarities.
_MIN_NORM = 1e-12


def peer_attention(
    deltas: np.ndarray, sizes: np.ndarray, temperature: float, self_weight: float = 0.5
) -> np.ndarray:
    """Peer-attention weights; each row sums to 1.

    Client k keeps ``self_weight`` of its own model; its peers j ≠ k share the rest with
    ``a_{kj} ∝ N_j exp(cos(Δ_k, Δ_j) / T)``. (A client's similarity to itself is always 1 and
    would drown every peer: on Diabetes 130 the cosines between clients' updates are 0.02–0.25.)

    Parameters
    ----------
    deltas
        ``(K, P)`` the clients' round updates of the shared parameters.
    sizes
        ``(K,)`` training rows N_j (the prior: T → ∞ gives FedAvg's weights over the peers).
    temperature
        T > 0.
    self_weight
        The diagonal, in [0, 1] (1 with a single client).

    Returns
    -------
    numpy.ndarray
        ``(K, K)``: row k holds the weights client k's aggregate gives each client.
    """
    d = np.asarray(deltas, dtype=np.float64)
    k = len(d)
    if k == 1:
        return np.ones((1, 1))
    norms = np.linalg.norm(d, axis=1, keepdims=True)
    unit = np.where(norms > _MIN_NORM, d / np.maximum(norms, _MIN_NORM), 0.0)
    logits = unit @ unit.T / temperature + np.log(np.maximum(np.asarray(sizes, float), 1.0))
    np.fill_diagonal(logits, -np.inf)
    logits -= logits.max(axis=1, keepdims=True)
    w = np.exp(logits)
    out: np.ndarray = (1.0 - self_weight) * w / w.sum(axis=1, keepdims=True)
    np.fill_diagonal(out, self_weight)
    return out


def attentive_aggregate(
    updates: Sequence[LocalUpdate],
    attention: np.ndarray,
    layout: ParamLayout,
    previous: Sequence[np.ndarray],
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each client's personalised aggregate of the shared parameters and BatchNorm statistics.

    Parameters
    ----------
    updates
        The clients' updates (row order of ``attention``).
    attention
        :func:`peer_attention`.
    layout
        Backbone and head slices of the shared parameter vector.
    previous
        Each client's previous aggregate (kept for a head nobody trained).

    Returns
    -------
    list of (params, buffers)
        One pair per client, float32.
    """
    stacked = np.stack([u.params.astype(np.float64) for u in updates])
    bufs = np.stack([u.buffers.astype(np.float64) for u in updates])
    out: list[tuple[np.ndarray, np.ndarray]] = []
    for k in range(len(updates)):
        a = attention[k]
        params = previous[k].astype(np.float64)
        params[layout.backbone] = a @ stacked[:, layout.backbone]
        for s, sl in layout.heads.items():
            pursue = np.array([u.objective_examples.get(s, 0) > 0 for u in updates])
            if pursue.any():
                w = np.where(pursue, a, 0.0)
                params[sl] = (w / w.sum()) @ stacked[:, sl]
        out.append((params.astype(np.float32), (a @ bufs).astype(np.float32)))
    return out


def build_client_models(
    federation: Federation, model_config: ModelConfig, config: BaselineConfig, seed: int
) -> tuple[list[PafnetClientModel], np.ndarray, np.ndarray]:
    """Every client's model, all starting from the same shared network ``w^0``.

    Returns the models, ``w^0`` and its BatchNorm statistics.
    """
    options = PafnetOptions.of(config)
    template = build_full_mlp(
        options.pafnet_latent, federation.objective_names, model_config, seed, "pafnet"
    )
    w0, b0 = get_params(template), get_buffers(template)
    models: list[PafnetClientModel] = []
    for c in federation.clients:
        seed_torch(seed, "pafnet-projection", c.client_id)
        m = PafnetClientModel(
            c.common_encoder.width + c.private_encoder.width,
            federation.objective_names,
            c.objectives,
            model_config,
            options.pafnet_latent,
            options.pafnet_mask_init,
        )
        set_params(m.body, w0)
        set_buffers(m.body, b0)
        models.append(m)
    return models, w0, b0


def pafnet_local_train(
    model: PafnetClientModel,
    params: np.ndarray,
    buffers: np.ndarray,
    client: ClientData,
    kinds: Mapping[str, str],
    config: BaselineConfig,
    *,
    seed: int,
    round_idx: int,
) -> LocalUpdate:
    """One round of a client's local training: projection, masks and shared weights together.

    Parameters
    ----------
    model
        The client's persistent model (projection and masks carry over between rounds).
    params, buffers
        The client's aggregate ``w̄_k`` of the shared network, from the server.
    client
        The client's data (its own features, not the union view).
    kinds
        Objective name → kind.
    config
        Local epochs, optimiser and batch size.
    seed, round_idx
        Key the client's random streams.

    Returns
    -------
    LocalUpdate
        The shared network's parameters and statistics after training (what is sent).
    """
    set_params(model.body, params)
    set_buffers(model.body, buffers)
    model.train()
    trained = [
        *model.projection.parameters(),
        *model.mask_scores,
        *trained_parameters(model.body, client.objectives),
    ]
    opt = make_optimizer(trained, config)
    losses = client_losses(client, kinds)
    groups = loss_groups(losses, client.train)
    x = torch.from_numpy(own_features(client.train))
    y = torch.from_numpy(client.train.y)
    rng = derive_rng(seed, "pafnet-batch", round_idx, client.client_id)
    seed_torch(seed, "pafnet-dropout", round_idx, client.client_id)

    def objective_losses(rows: torch.Tensor) -> dict[str, torch.Tensor]:
        scores = model.forward_all(x[rows], client.objectives)
        return masked_objective_losses(
            client.objectives,
            y[rows],
            losses,
            lambda s, mask: scores[s][mask],
            take_groups(groups, rows),
        )

    batches = batch_schedule(
        client.train.n, config.batch_size, config.local_epochs, config.max_local_steps, rng
    )
    means = train_on_batches(opt, batches, client.objectives, objective_losses)
    return LocalUpdate(
        client_id=client.client_id,
        params=get_params(model.body),
        buffers=get_buffers(model.body),
        num_examples=client.train.n,
        objective_examples={s: client.n_labelled(s) for s in client.objectives},
        losses=means,
    )


def _same_objective_attention(attention: np.ndarray, federation: Federation) -> float:
    """Mean attention a client gives to *other* clients sharing one of its objectives."""
    objs = [set(c.objectives) for c in federation.clients]
    vals = [
        sum(attention[k, j] for j in range(len(objs)) if j != k and objs[k] & objs[j])
        for k in range(len(objs))
    ]
    return float(np.mean(vals)) if vals else 0.0


def run_pafnet(
    federation: Federation,
    model_config: ModelConfig,
    config: BaselineConfig,
    rounds: int,
    seed: int,
    *,
    progress: ProgressFn | None = None,
) -> tuple[Stage1Result, list[PafnetClientModel], list[dict[str, np.ndarray]]]:
    """Run PAFNet in process for ``rounds`` rounds.

    Parameters
    ----------
    federation
        The clients (their own features; no union view).
    model_config
        Shared network widths.
    config
        Local training, latent width, mask start and attention temperature.
    rounds
        T.
    seed
        Experiment seed.
    progress
        Called as ``progress("stage1", t, T)``.

    Returns
    -------
    tuple[Stage1Result, list[PafnetClientModel], list[dict[str, ndarray]]]
        The round trace (``d_sq_norm``: mean over clients of ‖w̄_k^{t+1} − w̄_k^t‖²; the
        ``params`` are the size-weighted mean of the clients' final shared weights, which no
        client deploys), each client's deployed model (``pafnet_deploy``), in
        evaluation mode, and each client's cross-fitted validation predictions (empty where
        the last round is deployed).
    """
    objectives = federation.objective_names
    kinds = objective_kinds(federation)
    models, w0, b0 = build_client_models(federation, model_config, config, seed)
    layout = param_layout(models[0].body)
    starts = [(w0, b0) for _ in models]
    sizes = np.array([c.train.n for c in federation.clients], dtype=np.float64)
    trace: list[RoundInfo] = []
    attention = np.eye(len(models))
    updates: list[LocalUpdate] = []
    # No patience: every round runs, and each client keeps its best-validation state.
    kept = [
        KeptRound(m, c, kinds, seed, config)
        for m, c in zip(models, federation.clients, strict=True)
    ]
    for t in range(1, rounds + 1):
        updates = [
            pafnet_local_train(m, p, b, c, kinds, config, seed=seed, round_idx=t)
            for m, (p, b), c in zip(models, starts, federation.clients, strict=True)
        ]
        for k in kept:
            k.record(t)
        deltas = np.stack(
            [u.params.astype(np.float64) - p for u, (p, _) in zip(updates, starts, strict=True)]
        )
        options = PafnetOptions.of(config)
        attention = peer_attention(
            deltas, sizes, options.pafnet_temperature, options.pafnet_self_weight
        )
        new = attentive_aggregate(updates, attention, layout, [p for p, _ in starts])
        moved = [
            float(np.sum((n.astype(np.float64) - p) ** 2))
            for (n, _), (p, _) in zip(new, starts, strict=True)
        ]
        starts = new
        trace.append(
            RoundInfo(
                round=t,
                lambdas={},
                d_sq_norm=float(np.mean(moved)),
                losses=objective_round_losses(updates, objectives),
                participants=tuple(u.client_id for u in updates),
            )
        )
        if progress is not None:
            progress("stage1", t, rounds)
    weights = sizes / sizes.sum()
    mean_params = sum(
        w * u.params.astype(np.float64) for w, u in zip(weights, updates, strict=True)
    )
    mean_bufs = sum(w * u.buffers.astype(np.float64) for w, u in zip(weights, updates, strict=True))
    result = Stage1Result(
        params=np.asarray(mean_params, dtype=np.float32),
        buffers=np.asarray(mean_bufs, dtype=np.float32),
        rounds=trace,
        converged=False,
        objectives=objectives,
        layout=layout,
        notes=[
            "pafnet: last round's attention on peers sharing an objective "
            f"{_same_objective_attention(attention, federation):.2f} (per client, mean); "
            f"lowest validation loss after rounds {[k.keep.best_epoch for k in kept]}"
        ],
    )
    outputs = [k.deploy() for k in kept]
    return result, [m.eval() for m in models], outputs
