"""Stage 1 (paper Algorithm 1): federated multi-objective training of the shared backbone.

Pure functions: :func:`client_update` (what a client computes from ``w^t``), :func:`server_step`
(per-objective aggregation, min-norm λ*, the global step and ‖d‖²) and :func:`run_stage1`, an
in-process loop over both. The Flower layer calls the first two from its ClientApp and Strategy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np
import torch

from fedcare_core.config import ModelConfig, Stage1Config
from fedcare_core.config.seeds import derive_rng
from fedcare_core.data.clients import ClientData, Federation
from fedcare_core.errors import TrainingDivergedError
from fedcare_core.moo import min_norm_weights, normalisation_divisors, normalised_gram
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
    MIN_BATCH,
    ProgressFn,
    client_losses,
    loss_groups,
    objective_kinds,
)
from fedcare_core.privacy.mechanism import noise_stream
from fedcare_core.stage1.privacy_rounds import (
    RoundNoise,
    noisy_means,
    noisy_statistics,
    private_update,
)
from fedcare_core.stage1.types import (
    ClientUpdate,
    ObjectiveUpdate,
    RoundCallback,
    RoundInfo,
    ServerState,
    Stage1Result,
    Stage1Snapshot,
)

__all__ = [
    "ClientUpdate",
    "ObjectiveUpdate",
    "RoundCallback",
    "RoundInfo",
    "ServerState",
    "Stage1Result",
    "Stage1Snapshot",
    "apply_direction",
    "build_model",
    "check_snapshot",
    "client_update",
    "load_global_model",
    "run_stage1",
    "server_step",
]

#: Adam constants for the optional server optimiser (Kingma & Ba defaults).
_ADAM_BETAS = (0.9, 0.999)
_ADAM_EPS = 1e-8


def build_model(
    in_dim: int, objectives: Sequence[str], config: ModelConfig, seed: int
) -> MultiObjectiveModel:
    """The global model ``w^0``, initialised from the experiment seed."""
    seed_torch(seed, "stage1-init")
    return MultiObjectiveModel(in_dim, objectives, config)


def client_update(
    model: MultiObjectiveModel,
    params: np.ndarray,
    buffers: np.ndarray,
    client: ClientData,
    kinds: Mapping[str, str],
    config: Stage1Config,
    *,
    seed: int,
    round_idx: int,
) -> ClientUpdate:
    """Run τ local SGD steps per objective from ``w^t`` and return each Δ_{k,s} (eqs. 5–7).

    Parameters
    ----------
    model
        A scratch model of the global architecture (its weights are overwritten).
    params, buffers
        The broadcast global parameters ``w^t`` and BatchNorm statistics.
    client
        The client's data (only its common features are used here).
    kinds
        Objective name → its kind (:mod:`fedcare_core.objectives`).
    config
        τ, η_l and the batch size.
    seed, round_idx
        Key the client's random streams (mini-batches, dropout) so results do not depend on the
        order in which clients run.

    Returns
    -------
    ClientUpdate
        Δ_{k,s}, N_{k,s} and mean loss per objective, plus the BatchNorm statistics after local
        training (averaged over the client's objectives).
    """
    x = torch.from_numpy(client.train.x_common)
    y_all = torch.from_numpy(client.train.y)
    losses = client_losses(client, kinds)
    groups = loss_groups(losses, client.train)
    names = [n for n, _ in model.named_parameters()]
    offsets = np.cumsum([0] + [p.numel() for p in model.parameters()])
    updates: dict[str, ObjectiveUpdate] = {}
    buf_sum = np.zeros_like(buffers, dtype=np.float64)
    for j, s in enumerate(client.objectives):
        set_params(model, params)
        set_buffers(model, buffers)
        model.train()
        seed_torch(seed, "stage1-dropout", round_idx, client.client_id, s)
        rng = derive_rng(seed, "stage1-batch", round_idx, client.client_id, s)
        labelled = np.flatnonzero(np.isfinite(client.train.y[:, j]))
        order = labelled[rng.permutation(len(labelled))]
        batch = max(MIN_BATCH, min(config.batch_size, len(order)))
        chosen = [
            (i, p)
            for i, (n, p) in enumerate(zip(names, model.parameters(), strict=True))
            if n.startswith("backbone.") or n.startswith(f"heads.{s}.")
        ]
        stepped: list[torch.Tensor] = [p for _, p in chosen]
        sums = [torch.zeros_like(p) for p in stepped]
        loss_total = 0.0
        for step in range(config.local_steps):
            start = (step * batch) % max(len(order), 1)
            idx = np.take(order, np.arange(start, start + batch), mode="wrap")
            idx_t = torch.from_numpy(idx)
            codes = groups[s][idx_t] if s in groups else None
            loss = losses[s](model(x[idx_t], s), y_all[idx_t, j], codes)
            grads = torch.autograd.grad(loss, stepped)
            with torch.no_grad():
                # One multi-tensor call per operation instead of a Python loop over the
                # tensors: the same arithmetic (Σ g; p − η_l·g, the product rounded first).
                torch._foreach_add_(sums, grads)
                torch._foreach_sub_(stepped, torch._foreach_mul(grads, config.local_lr))
            loss_total += float(loss.detach())
        acc = torch.zeros(int(offsets[-1]), dtype=torch.float32)
        for (i, _), g_sum in zip(chosen, sums, strict=True):
            acc[offsets[i] : offsets[i + 1]] = g_sum.reshape(-1)
        updates[s] = ObjectiveUpdate(
            delta=acc.numpy(),
            num_examples=len(labelled),
            loss=loss_total / config.local_steps,
        )
        buf_sum += get_buffers(model)
    mean_buffers = (buf_sum / max(len(client.objectives), 1)).astype(np.float32)
    dp = config.privacy()
    if dp is not None:
        return private_update(client.client_id, updates, mean_buffers - buffers, dp.clip)
    return ClientUpdate(
        client_id=client.client_id,
        objectives=updates,
        buffers=mean_buffers,
        num_examples=client.train.n,
    )


def aggregate_objectives(
    updates: Sequence[ClientUpdate], objectives: Sequence[str]
) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """Per-objective weighted aggregation Δ_s = Σ_k p_{k,s} Δ_{k,s} (eq. 8), in float64.

    Returns the aggregated Δ_s and the equally weighted training loss of each objective that
    received at least one update.
    """
    deltas: dict[str, np.ndarray] = {}
    losses: dict[str, float] = {}
    for s in objectives:
        contrib = [u.objectives[s] for u in updates if s in u.objectives]
        total = sum(c.num_examples for c in contrib)
        if not contrib or total == 0:
            continue
        acc = np.zeros(contrib[0].delta.shape, dtype=np.float64)
        loss = 0.0
        for c in contrib:
            p = c.num_examples / total
            acc += p * c.delta.astype(np.float64)
            loss += p * c.loss
        deltas[s] = acc
        losses[s] = loss
    return deltas, losses


def check_finite_updates(deltas: Mapping[str, np.ndarray], round_idx: int) -> None:
    """Refuse a round whose aggregated per-objective updates hold NaN or ±inf.

    Raises
    ------
    TrainingDivergedError
        Naming the round and the objectives, with what to change.
    """
    bad = [s for s, d in deltas.items() if not np.isfinite(d).all()]
    if bad:
        raise TrainingDivergedError(
            f"Stage 1 diverged in round {round_idx}: the aggregated update of "
            f"{', '.join(bad)} is not finite (NaN or infinite); lower the step sizes "
            "(stage1.global_lr, stage1.local_lr) or, under differential privacy, the noise "
            "(a larger stage1.dp_epsilon or a smaller stage1.dp_noise_multiplier)"
        )


def descent_direction(
    deltas: Mapping[str, np.ndarray],
    losses: Mapping[str, float],
    layout: ParamLayout,
    config: Stage1Config,
) -> tuple[np.ndarray, dict[str, float]]:
    """Solve the min-norm QP (eq. 9) and form the direction d (eq. 10).

    ``normalise`` rescales each Δ_s for the QP only (MGDA-UB convention: the direction combines
    the raw Δ_s with the weights found). With ``qp_scope="backbone"`` λ* comes from the backbone
    block alone and each head moves along its own Δ_s.
    """
    names = list(deltas)
    mat = np.stack([deltas[s] for s in names])
    block = mat[:, layout.backbone] if config.qp_scope == "backbone" else mat
    gram = block @ block.T
    # A DP run's clients send no losses ("loss+" is refused there).
    loss_values = np.array([losses[s] for s in names]) if set(names) <= set(losses) else None
    divisors = normalisation_divisors(np.diag(gram).copy(), loss_values, config.normalise)
    weights, _ = min_norm_weights(normalised_gram(gram, divisors), method=config.solver)
    direction = weights @ mat
    if config.qp_scope == "backbone":
        for s in names:
            sl = layout.heads[s]
            direction[sl] = deltas[s][sl]
    return direction, {s: float(w) for s, w in zip(names, weights, strict=True)}


def server_step(
    state: ServerState,
    updates: Sequence[ClientUpdate],
    objectives: Sequence[str],
    layout: ParamLayout,
    config: Stage1Config,
    round_idx: int,
    noise: RoundNoise | None = None,
) -> tuple[ServerState, RoundInfo]:
    """Aggregate, solve for λ*, and step the global model (eqs. 8–11).

    Parameters
    ----------
    state
        ``w^t``, BatchNorm statistics and server optimiser state.
    updates
        The updates of the clients that replied this round.
    objectives
        All objectives of the federation (S).
    layout
        Parameter layout of the global model.
    config
        η_g, solver, normalisation, QP scope and server optimiser.
    round_idx
        1-based round number.
    noise
        Under differential privacy, the round's noise: the (jointly clipped) updates are
        summed per objective, noised and averaged uniformly
        (:mod:`fedcare_core.stage1.privacy_rounds`)
        and the round is one release for the accountant. None: eq. 8's weighted mean.

    Returns
    -------
    tuple[ServerState, RoundInfo]
        ``w^{t+1}`` and the round's λ*, ‖d‖², losses, participants and (under DP) ε.
    """
    participants = tuple(sorted(u.client_id for u in updates))
    if noise is None:
        deltas, losses = aggregate_objectives(updates, objectives)
    else:
        ordered = sorted(updates, key=lambda u: u.client_id)
        deltas, buffer_change = noisy_means(
            [{s: o.delta for s, o in u.objectives.items()} for u in ordered],
            [u.buffers for u in ordered],
            objectives,
            noise,
        )
        losses = {}
    missing = tuple(s for s in objectives if s not in deltas)
    if not deltas:
        return state, RoundInfo(round_idx, {}, float("nan"), {}, participants, missing)
    check_finite_updates(deltas, round_idx)
    direction, lambdas = descent_direction(deltas, losses, layout, config)
    d_sq = squared_norm(direction)
    new = replace(apply_direction(state, direction, config), dp_releases=state.dp_releases)
    epsilon = None
    if noise is not None:
        new.dp_releases += 1
        epsilon = noise.settings.epsilon_after(new.dp_releases)
        if buffer_change is not None:
            new.buffers = noisy_statistics(state.buffers, buffer_change, layout.variances)
        return new, RoundInfo(
            round_idx, lambdas, d_sq, losses, participants, missing, epsilon=epsilon
        )
    total = sum(u.num_examples for u in updates)
    if total:
        merged = np.zeros(state.buffers.shape, dtype=np.float64)
        for u in updates:
            merged += u.num_examples / total * u.buffers.astype(np.float64)
        new.buffers = merged.astype(np.float32)
    return new, RoundInfo(round_idx, lambdas, d_sq, losses, participants, missing)


def apply_direction(state: ServerState, direction: np.ndarray, config: Stage1Config) -> ServerState:
    """The global step along ``d`` (eq. 11, or the server's Adam); ``dp_releases`` not kept."""
    params = state.params.astype(np.float64)
    if config.server_optimizer == "sgd":
        params = params - config.global_lr * direction
        return ServerState(params.astype(np.float32), state.buffers)
    b1, b2 = _ADAM_BETAS
    m = np.zeros_like(params) if state.adam_m is None else state.adam_m
    v = np.zeros_like(params) if state.adam_v is None else state.adam_v
    t = state.step + 1
    m = b1 * m + (1 - b1) * direction
    v = b2 * v + (1 - b2) * direction**2
    step = config.global_lr * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + _ADAM_EPS)
    return ServerState((params - step).astype(np.float32), state.buffers, m, v, t)


def run_stage1(
    federation: Federation,
    model_config: ModelConfig,
    config: Stage1Config,
    seed: int,
    *,
    progress: ProgressFn | None = None,
    start: Stage1Snapshot | None = None,
    on_round: RoundCallback | None = None,
) -> Stage1Result:
    """Run Algorithm 1 in process: every client, every round, until ‖d‖² ≤ ε or T rounds.

    Parameters
    ----------
    federation
        Clients and objectives.
    model_config, config
        Architecture and Stage 1 hyper-parameters.
    seed
        Experiment seed (initialisation and every client's random streams).
    progress
        Called as ``progress("stage1", round, T)`` after each round.
    start
        Continue after this snapshot's round (a restored checkpoint) instead of from ``w^0``;
        the result is bit-identical to the uninterrupted loop's.
    on_round
        Called with the :class:`Stage1Snapshot` after each round, before ``progress``.

    Returns
    -------
    Stage1Result
        ``w*``, its BatchNorm statistics and the per-round λ* / ‖d‖² trace.
    """
    if config.secagg:
        raise ValueError("secure aggregation (stage1.secagg) needs a Flower backend")
    objectives = federation.objective_names
    kinds = objective_kinds(federation)
    model = build_model(federation.common_width, objectives, model_config, seed)
    layout = param_layout(model)
    state = ServerState(get_params(model), get_buffers(model))
    rounds: list[RoundInfo] = []
    converged = False
    if start is not None:
        check_snapshot(start, state, config)
        state, rounds, converged = start.state, list(start.rounds), start.converged
    # A converged snapshot ends the loop; otherwise continue with the round after it.
    last = len(rounds) if converged else config.rounds
    dp = config.privacy()
    secret = dp.noise_source() if dp is not None else 0
    for t in range(len(rounds) + 1, last + 1):
        updates = [
            client_update(
                model, state.params, state.buffers, c, kinds, config, seed=seed, round_idx=t
            )
            for c in federation.clients
        ]
        noise = None if dp is None else RoundNoise(dp, noise_stream(secret, t))
        state, info = server_step(state, updates, objectives, layout, config, t, noise)
        rounds.append(info)
        converged = info.d_sq_norm <= config.epsilon
        if on_round is not None:
            on_round(Stage1Snapshot(t, state, tuple(rounds), converged))
        if progress is not None:
            progress("stage1", t, config.rounds)
        if converged:
            break
    return Stage1Result(
        params=state.params,
        buffers=state.buffers,
        rounds=rounds,
        converged=converged,
        objectives=objectives,
        layout=layout,
    )


def check_snapshot(snap: Stage1Snapshot, fresh: ServerState, config: Stage1Config) -> None:
    """Refuse a snapshot that cannot continue this run (wrong model shape or round count).

    Parameters
    ----------
    snap
        The restored snapshot.
    fresh
        The run's ``w^0`` state (for the shapes).
    config
        The run's Stage 1 settings (for T).

    Raises
    ------
    ValueError
        If the shapes differ, or the snapshot's round is not within ``0..T`` with that many
        recorded rounds.
    """
    if snap.state.params.shape != fresh.params.shape or (
        snap.state.buffers.shape != fresh.buffers.shape
    ):
        raise ValueError(
            f"snapshot holds {snap.state.params.size} parameters and {snap.state.buffers.size} "
            f"buffer values; this model has {fresh.params.size} and {fresh.buffers.size}"
        )
    if not 0 <= snap.round <= config.rounds or len(snap.rounds) != snap.round:
        raise ValueError(
            f"snapshot of round {snap.round} with {len(snap.rounds)} recorded rounds cannot "
            f"continue a run of {config.rounds} rounds"
        )


def load_global_model(
    result: Stage1Result, in_dim: int, model_config: ModelConfig
) -> MultiObjectiveModel:
    """Materialise ``w*`` as a model in evaluation mode."""
    model = MultiObjectiveModel(in_dim, result.objectives, model_config)
    set_params(model, result.params)
    set_buffers(model, result.buffers)
    return model.eval()
