"""FedAvg (McMahan et al., 2017) and FedProx (Li et al., 2020) on the FullMLP.

Both share one local-training loop; FedProx adds the proximal term ``μ/2 ‖w − w^t‖²`` to each
local step's loss (μ = 0 is FedAvg exactly). The server averages the clients' models:

- the backbone over all clients, weights ``N_k / Σ N_j`` (training rows);
- objective s's head over the clients pursuing s, weights ``N_{k,s} / Σ_{j∈K_s} N_{j,s}``
  (rows labelled for s). A client never moves a head it does not train, so averaging its
  unchanged copy in would only shrink the others' updates;
- BatchNorm running statistics over all clients, weights ``N_k / Σ N_j`` (as in Stage 1).

Under client-level differential privacy (``stage1.dp_*``; :mod:`fedcare_core.privacy.mechanism`, the
mechanism FedCARE's Stage 1 uses) a client sends its model change ``w_k − w^t`` and the change
of its BatchNorm statistics, clipped jointly to L2 norm ≤ C, and no counts or losses. The
server sums the changes, adds N(0, (z·C)²) to every coordinate of both sums (one Gaussian
release per round), and averages uniformly: the backbone and the statistics over the clients
that replied, head s over those of them pursuing s (which objectives a client pursues the
server learns in Stage 1 too, from the objectives it sends a Δ_{k,s} for); running variances
are kept above :data:`~fedcare_core.stage1.privacy_rounds.VARIANCE_FLOOR`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import torch

from fedcare_core.algorithms.union.common import (
    build_full_mlp,
    make_optimizer,
    multi_objective_loss,
    split_tensors,
    train_on_batches,
    trained_parameters,
)
from fedcare_core.algorithms.union.updates import LocalUpdate, objective_round_losses
from fedcare_core.config import BaselineConfig, ModelConfig
from fedcare_core.config.seeds import derive_rng
from fedcare_core.data.clients import ClientData, Federation
from fedcare_core.nn.models import MultiObjectiveModel
from fedcare_core.nn.param_vectors import (
    ParamLayout,
    get_buffers,
    get_params,
    param_layout,
    set_buffers,
    set_params,
    squared_norm,
)
from fedcare_core.nn.seeding import seed_torch
from fedcare_core.nn.training import (
    ProgressFn,
    batch_schedule,
    client_losses,
    loss_groups,
    objective_kinds,
    take_groups,
)
from fedcare_core.privacy.mechanism import DpSettings, noise_stream
from fedcare_core.stage1.loop import RoundInfo, Stage1Result
from fedcare_core.stage1.privacy_rounds import (
    RoundNoise,
    clip_client_vectors,
    noisy_statistics,
    noisy_sum,
)


def proximal_term(
    params: Sequence[torch.Tensor], anchors: Sequence[torch.Tensor], mu: float
) -> torch.Tensor:
    """FedProx's proximal term ``μ/2 Σ ‖p − p^t‖²``; its gradient is ``μ (w − w^t)``.

    Parameters
    ----------
    params
        The parameters being trained.
    anchors
        Their values ``w^t`` at the start of the round (detached).
    mu
        μ ≥ 0.

    Returns
    -------
    torch.Tensor
        A scalar.
    """
    total = torch.zeros((), dtype=torch.float32)
    for p, a in zip(params, anchors, strict=True):
        total = total + ((p - a) ** 2).sum()
    return 0.5 * mu * total


def local_train(
    model: MultiObjectiveModel,
    params: np.ndarray,
    buffers: np.ndarray,
    client: ClientData,
    kinds: Mapping[str, str],
    config: BaselineConfig,
    *,
    prox_mu: float,
    seed: int,
    round_idx: int,
    dp_clip: float | None = None,
) -> LocalUpdate:
    """Train a client's copy of the global model for one round (FedAvg's ClientUpdate).

    Parameters
    ----------
    model
        A scratch FullMLP (its weights are overwritten).
    params, buffers
        The broadcast ``w^t`` and BatchNorm statistics.
    client
        The client's union view (``x_common`` holds the union vectors).
    kinds
        Objective name → its kind (:mod:`fedcare_core.objectives`).
    config
        Local epochs, step cap, optimiser and batch size.
    prox_mu
        FedProx's μ (0: FedAvg; the term is then not added at all).
    seed, round_idx
        Key the client's mini-batch and dropout streams.
    dp_clip
        Under differential privacy, C: the update is :func:`private_local_update`'s.

    Returns
    -------
    LocalUpdate
        ``w_k``, its BatchNorm statistics, counts and mean losses (under DP: the clipped
        changes only).
    """
    set_params(model, params)
    set_buffers(model, buffers)
    model.train()
    trained = trained_parameters(model, client.objectives)
    anchors = [p.detach().clone() for p in trained]
    opt = make_optimizer(trained, config)
    losses = client_losses(client, kinds)
    groups = loss_groups(losses, client.train)
    x, y = split_tensors(client.train)
    rng = derive_rng(seed, "baseline-batch", round_idx, client.client_id)
    seed_torch(seed, "baseline-dropout", round_idx, client.client_id)
    batches = batch_schedule(
        client.train.n, config.batch_size, config.local_epochs, config.max_local_steps, rng
    )
    means = train_on_batches(
        opt,
        batches,
        client.objectives,
        lambda rows: multi_objective_loss(
            model, losses, client.objectives, x[rows], y[rows], take_groups(groups, rows)
        ),
        (lambda: proximal_term(trained, anchors, prox_mu)) if prox_mu > 0 else None,
    )
    update = LocalUpdate(
        client_id=client.client_id,
        params=get_params(model),
        buffers=get_buffers(model),
        num_examples=client.train.n,
        objective_examples={s: client.n_labelled(s) for s in client.objectives},
        losses=means,
    )
    if dp_clip is not None:
        return private_local_update(update, params, buffers, dp_clip)
    return update


def private_local_update(
    update: LocalUpdate, params: np.ndarray, buffers: np.ndarray, clip: float
) -> LocalUpdate:
    """What a client sends under DP: its clipped changes, no counts, no losses.

    Parameters
    ----------
    update
        Its update after local training (``w_k``, statistics, counts, losses).
    params, buffers
        The broadcast ``w^t`` and statistics the round started from.
    clip
        C: the model change and the statistics change together get L2 norm ≤ C
        (:func:`~fedcare_core.stage1.privacy_rounds.clip_client_vectors`, as in Stage 1).

    Returns
    -------
    LocalUpdate
        ``params``/``buffers`` the clipped changes (float32), every count 0, no losses.
    """
    change = update.params.astype(np.float64) - params.astype(np.float64)
    buffer_change = update.buffers.astype(np.float64) - buffers.astype(np.float64)
    clipped, clipped_buffers = clip_client_vectors({"model": change}, buffer_change, clip)
    return LocalUpdate(
        client_id=update.client_id,
        params=clipped["model"],
        buffers=clipped_buffers,
        num_examples=0,
        # The heads it moved (N_{k,s} > 0, the clients aggregate_models averages a head over).
        objective_examples={s: 0 for s, n in update.objective_examples.items() if n > 0},
        losses={},
    )


#: A server step without DP: ``(w^t, statistics, updates, layout) → (w^{t+1}, statistics)``.
Aggregate = Callable[
    [np.ndarray, np.ndarray, Sequence[LocalUpdate], ParamLayout], tuple[np.ndarray, np.ndarray]
]


def aggregate_models(
    params: np.ndarray,
    buffers: np.ndarray,
    updates: Sequence[LocalUpdate],
    layout: ParamLayout,
) -> tuple[np.ndarray, np.ndarray]:
    """FedAvg's weighted average, per block (module docstring), in float64.

    Parameters
    ----------
    params, buffers
        The global ``w^t`` and statistics (kept for a head no client trained).
    updates
        The clients' updates.
    layout
        Backbone and head slices of the flat parameter vector.

    Returns
    -------
    tuple[numpy.ndarray, numpy.ndarray]
        ``w^{t+1}`` and the averaged BatchNorm statistics (float32).
    """
    out = params.astype(np.float64)
    total = sum(u.num_examples for u in updates)
    if total == 0:
        return params.copy(), buffers.copy()
    bb = layout.backbone
    out[bb] = sum(u.num_examples / total * u.params[bb].astype(np.float64) for u in updates)
    for s, sl in layout.heads.items():
        contrib = [u for u in updates if u.objective_examples.get(s, 0) > 0]
        n_s = sum(u.objective_examples[s] for u in contrib)
        if n_s:
            out[sl] = sum(
                u.objective_examples[s] / n_s * u.params[sl].astype(np.float64) for u in contrib
            )
    buf = sum(u.num_examples / total * u.buffers.astype(np.float64) for u in updates)
    return out.astype(np.float32), np.asarray(buf, dtype=np.float32)


def _private_aggregate(
    params: np.ndarray,
    buffers: np.ndarray,
    updates: Sequence[LocalUpdate],
    layout: ParamLayout,
    noise: RoundNoise,
) -> tuple[np.ndarray, np.ndarray]:
    """DP FedAvg's server average of clipped changes (module docstring), one noisy release.

    Parameters
    ----------
    params, buffers
        The global ``w^t`` and statistics.
    updates
        The replying clients' private updates (:func:`private_local_update`), at least one.
    layout
        Backbone and head slices, and where the running variances lie.
    noise
        The round's settings and generator: the noise is drawn for the model change's sum,
        then for the statistics change's sum.

    Returns
    -------
    tuple[numpy.ndarray, numpy.ndarray]
        ``w^{t+1}`` and the new statistics (float32).
    """
    ordered = sorted(updates, key=lambda u: u.client_id)
    total = noisy_sum([u.params for u in ordered], noise)
    out = params.astype(np.float64)
    out[layout.backbone] += total[layout.backbone] / len(ordered)
    for s, sl in layout.heads.items():
        # A head nobody pursued keeps its value; its coordinates of the sum are noise alone.
        movers = sum(1 for u in ordered if s in u.objective_examples)
        if movers:
            out[sl] += total[sl] / movers
    if buffers.size == 0:
        return out.astype(np.float32), buffers.copy()
    change = noisy_sum([u.buffers for u in ordered], noise) / len(ordered)
    return out.astype(np.float32), noisy_statistics(buffers, change, layout.variances)


def server_round(
    params: np.ndarray,
    buffers: np.ndarray,
    updates: Sequence[LocalUpdate],
    layout: ParamLayout,
    objectives: Sequence[str],
    round_idx: int,
    noise: RoundNoise | None = None,
    *,
    releases: int = 0,
    aggregate: Aggregate | None = None,
) -> tuple[np.ndarray, np.ndarray, RoundInfo]:
    """FedAvg's server side of one round: the new global model and the round's trace.

    The in-process loop (:func:`run_fedavg`) and the Flower strategy
    (``fedcare.flower.fedavg``) both call this, so they compute on the same floats.

    Parameters
    ----------
    params, buffers
        ``w^t`` and its BatchNorm statistics.
    updates
        The clients' updates, in client-id order (the order of the floating-point sums).
    layout
        Backbone and head slices of the flat parameter vector.
    objectives
        Every objective of the federation.
    round_idx
        t.
    noise
        Under differential privacy, the round's noise: ``updates`` are private ones and the
        round is :func:`_private_aggregate`, one release for the accountant. None: the
        weighted average of :func:`aggregate_models`.
    releases
        Under DP, the Gaussian rounds released before this one (``ServerState.dp_releases``).
    aggregate
        The method's server step without DP (:meth:`FedAvg.aggregate
        <fedcare_core.algorithms.fedavg.method.FedAvg.aggregate>`); None:
        :func:`aggregate_models`.

    Returns
    -------
    tuple
        ``w^{t+1}``, its statistics, and the round's :class:`RoundInfo` (no λ*;
        ``d_sq_norm`` is ``‖w^{t+1} − w^t‖²``; under DP no losses, and the ε spent after
        ``releases + 1`` releases, or None when no client replied and nothing was released).
    """
    if noise is None:
        step_of = aggregate_models if aggregate is None else aggregate
        new_params, new_buffers = step_of(params, buffers, updates, layout)
        losses = objective_round_losses(updates, objectives)
        epsilon = None
    elif updates:
        new_params, new_buffers = _private_aggregate(params, buffers, updates, layout, noise)
        losses = {}
        epsilon = noise.settings.epsilon_after(releases + 1)
    else:  # nothing released: the model stays, ε is not reported (as in Stage 1)
        new_params, new_buffers, losses, epsilon = params.copy(), buffers.copy(), {}, None
    step = new_params.astype(np.float64) - params.astype(np.float64)
    info = RoundInfo(
        round=round_idx,
        lambdas={},
        d_sq_norm=squared_norm(step),
        losses=losses,
        participants=tuple(u.client_id for u in updates),
        epsilon=epsilon,
    )
    return new_params, new_buffers, info


def run_fedavg(
    federation: Federation,
    model_config: ModelConfig,
    config: BaselineConfig,
    rounds: int,
    seed: int,
    *,
    prox_mu: float = 0.0,
    progress: ProgressFn | None = None,
    privacy: DpSettings | None = None,
    aggregate: Aggregate | None = None,
) -> Stage1Result:
    """Run FedAvg (``prox_mu = 0``) or FedProx in process for ``rounds`` rounds.

    Parameters
    ----------
    federation
        The union view of the clients
        (:func:`~fedcare_core.algorithms.union.features.union_federation`).
    model_config
        FullMLP widths.
    config
        Local training settings.
    rounds
        T.
    seed
        Experiment seed.
    prox_mu
        FedProx's μ.
    progress
        Called as ``progress("stage1", t, T)`` after each round.
    privacy
        Client-level DP (``stage1.privacy()``): clipped changes, one noisy release per round,
        the noise keyed by a secret drawn once for the run. None: no DP.
    aggregate
        The server step without DP (:func:`server_round`'s); None: :func:`aggregate_models`.

    Returns
    -------
    Stage1Result
        The final global model and, per round, each objective's training loss and
        ``‖w^{t+1} − w^t‖²`` (as ``d_sq_norm``; no λ*). Under DP: no losses, ε per round.
    """
    objectives = federation.objective_names
    kinds = objective_kinds(federation)
    model = build_full_mlp(federation.common_width, objectives, model_config, seed)
    layout = param_layout(model)
    params, buffers = get_params(model), get_buffers(model)
    trace: list[RoundInfo] = []
    secret = privacy.noise_source() if privacy is not None else 0
    clip = privacy.clip if privacy is not None else None
    releases = 0
    for t in range(1, rounds + 1):
        updates = [
            local_train(
                model,
                params,
                buffers,
                c,
                kinds,
                config,
                prox_mu=prox_mu,
                seed=seed,
                round_idx=t,
                dp_clip=clip,
            )
            for c in federation.clients
        ]
        noise = None if privacy is None else RoundNoise(privacy, noise_stream(secret, t))
        params, buffers, info = server_round(
            params,
            buffers,
            updates,
            layout,
            objectives,
            t,
            noise,
            releases=releases,
            aggregate=aggregate,
        )
        if info.epsilon is not None:
            releases += 1
        trace.append(info)
        if progress is not None:
            progress("stage1", t, rounds)
    return Stage1Result(
        params=params,
        buffers=buffers,
        rounds=trace,
        converged=False,
        objectives=objectives,
        layout=layout,
    )
