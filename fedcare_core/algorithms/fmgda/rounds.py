"""FMGDA and FSMGDA (Yang et al., "Federated Multi-Objective Learning", NeurIPS 2023).

Both are Algorithm 1's structure on the FullMLP: each client takes τ local steps per objective
from ``w^t`` and returns the accumulated gradients Δ_{k,s}; the server aggregates them per
objective, solves the min-norm problem for λ* and steps ``w ← w − η_g Σ λ*_s Δ_s``. They differ
only in the local gradient:

- FMGDA: *full* local gradients — every local step's gradient is over all of the client's
  training rows labelled for the objective;
- FSMGDA: *stochastic* gradients — mini-batches of ``stage1.batch_size`` rows.

So both reuse :func:`fedcare_core.stage1.loop.client_update` /
:func:`~fedcare_core.stage1.loop.server_step`
unchanged on the union view of the clients; FMGDA only sets the batch size to the largest
client's training set. τ, η_l, η_g, ε, the solver, normalisation and QP scope come from
``stage1`` (paper-faithful defaults: plain MGDA on the whole parameter vector).
"""

from __future__ import annotations

from dataclasses import replace

from fedcare_core.config import ModelConfig, Stage1Config
from fedcare_core.data.clients import Federation
from fedcare_core.nn.training import ProgressFn
from fedcare_core.stage1.loop import Stage1Result, run_stage1


def mgda_config(config: Stage1Config, federation: Federation, *, full: bool) -> Stage1Config:
    """Stage 1 settings for FMGDA (``full``: batch = whole local training set) or FSMGDA.

    Parameters
    ----------
    config
        The experiment's Stage 1 settings.
    federation
        The clients (for the largest training set).
    full
        FMGDA when true, FSMGDA otherwise.

    Returns
    -------
    Stage1Config
        ``config`` with ``batch_size`` covering every client's training rows when ``full``.
    """
    if not full:
        return config
    largest = max((c.train.n for c in federation.clients), default=1)
    return replace(config, batch_size=max(largest, config.batch_size))


def run_mgda(
    federation: Federation,
    model_config: ModelConfig,
    config: Stage1Config,
    seed: int,
    *,
    full: bool,
    progress: ProgressFn | None = None,
) -> Stage1Result:
    """Run FMGDA (``full=True``) or FSMGDA on the union view of the clients.

    Parameters
    ----------
    federation
        The union view (:func:`~fedcare_core.algorithms.union.features.union_federation`).
    model_config
        FullMLP widths.
    config
        Stage 1 settings (rounds, τ, η_l, η_g, batch size, solver, ...).
    seed
        Experiment seed.
    full
        Full local gradients (FMGDA) or mini-batch ones (FSMGDA).
    progress
        Called as ``progress("stage1", t, T)``.

    Returns
    -------
    Stage1Result
        The global FullMLP and the per-round λ*, ‖d‖² and losses.
    """
    cfg = mgda_config(config, federation, full=full)
    return run_stage1(federation, model_config, cfg, seed, progress=progress)
