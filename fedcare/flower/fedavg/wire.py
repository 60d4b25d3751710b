"""FedAvg and FedProx baselines over Flower, with Flower's own strategies.

The server runs :class:`flwr.serverapp.strategy.FedAvg` / :class:`~flwr.serverapp.strategy.FedProx`
(Flower's round loop, node sampling, message construction and FedProx's ``proximal-mu`` config
entry) subclassed in one place only: :meth:`UnionFedAvg.aggregate_train`, which splits error
replies from results with the public ``Message.has_error()`` (not FedAvg's private reply check)
and decodes every key the core's aggregation reads. The ServerApp runs it on a
:class:`~fedcare.flower.polling.PollingGrid` (:func:`fedcare.flower.server_app.run_server`).
Flower's aggregation averages every array of every reply with one weight per client
(``num-examples``), in float32. The core's FedAvg (:mod:`fedcare_core.algorithms.fedavg.rounds`)
averages per block: the backbone over all clients by N_k, head s over the clients pursuing s by
N_{k,s} (a client never trains another objective's head, so its unchanged copy would shrink the
others' steps), BatchNorm statistics by N_k, in float64. The override decodes the replies,
orders them by client id and calls the core's
:func:`~fedcare_core.algorithms.fedavg.rounds.server_round`,
so the global model is the in-process one bit for bit.

Each client runs :func:`fedcare_core.algorithms.fedavg.rounds.local_train` on its union vectors: the
server sends the union layout (column names, no rows) in the train config and the client embeds
its own encoded features (:func:`~fedcare_core.algorithms.union.features.union_client`), the same
function the in-process runner applies.

Wire format (one ``train`` message per client and round, Flower's FedAvg layout)
    ``"arrays"`` ArrayRecord: ``params``, ``buffers`` (float32, the global FullMLP ``w^t``).
    ``"config"`` ConfigRecord: ``protocol``, ``algorithm`` (``fedavg``/``fedprox``), ``seed``,
    ``objectives``, ``kinds``, ``model-config`` and ``baseline-config`` (JSON),
    ``union-layout`` (bytes, UTF-8 JSON: ``common_width``, ``columns``), ``threads``, plus
    ``server-round`` (injected by FedAvg) and ``proximal-mu`` (injected by FedProx; absent:
    μ = 0); under differential privacy ``dp-clip`` (C).
Reply
    ``"arrays"`` ArrayRecord: ``params``, ``buffers`` (``w_k`` after local training).
    ``"metrics"`` MetricRecord: ``num-examples`` (N_k), ``client-id``, and for **every**
    objective ``num-examples.<s>`` (N_{k,s}; 0 = not pursued) and ``loss.<s>`` (mean local
    loss; 0.0 when not pursued), so all replies carry the same keys.
Reply under differential privacy (``dp-clip`` in the config; the core's
:func:`~fedcare_core.algorithms.fedavg.rounds.private_local_update`)
    ``"arrays"``: ``params``, ``buffers`` hold the jointly clipped changes ``w_k − w^t`` and of
    the statistics. ``"metrics"``: ``client-id`` and, for every objective, ``pursues.<s>``
    (1 or 0); no counts, no losses. The server adds the noise once per round
    (:func:`~fedcare_core.algorithms.fedavg.rounds.server_round`), its secret drawn once when the
    strategy is built.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict
from typing import cast

from flwr.app import (
    ConfigRecord,
    MetricRecord,
    MetricRecordValues,
    RecordDict,
)

from fedcare.flower.federated_rounds import ALGORITHM_KEY
from fedcare.flower.messages import (
    ARRAYS,
    CLIENT_ID,
    CONFIG,
    COUNT_PREFIX,
    LOSS_PREFIX,
    METRICS,
    NUM_EXAMPLES,
    PROTOCOL,
    PROTOCOL_VERSION,
    SERVER_ROUND,
    UNION_LAYOUT,
    ProtocolError,
    model_arrays,
    model_from_arrays,
)
from fedcare.flower.run_plan import RunPlan
from fedcare.flower.union_view import encode_union_layout, plan_union_layout, union_view
from fedcare_core.algorithms.fedavg.rounds import LocalUpdate
from fedcare_core.config import ModelConfig
from fedcare_core.config.method_options import baselines
from fedcare_core.data.clients import ClientData

PROXIMAL_MU = "proximal-mu"  # the key Flower's FedProx.configure_train sets
DP_CLIP = "dp-clip"  # present only under differential privacy
_PURSUES_PREFIX = "pursues."  # a private reply's objectives, without counts
EPSILON = "epsilon"


def flower_strategy(algorithm: str) -> str | None:
    """Flower's own strategy that runs ``algorithm``'s rounds (``Algorithm.flower_strategy``).

    None: Algorithm 1's rounds (FedCARE, FedCARE-B; FMGDA/FSMGDA on the union view), which
    :mod:`fedcare.flower.strategy` runs, or a name no algorithm has.
    """
    from fedcare_core.algorithms import algorithm_names, get_algorithm

    return get_algorithm(algorithm).flower_strategy if algorithm in algorithm_names() else None


def baseline_train_config(plan: RunPlan) -> ConfigRecord:
    """The ConfigRecord every round's ``train`` message carries (FedAvg adds the round)."""
    private = {} if plan.stage1.privacy() is None else {DP_CLIP: float(plan.stage1.dp_clip)}
    return ConfigRecord(
        {
            PROTOCOL: PROTOCOL_VERSION,
            ALGORITHM_KEY: plan.algorithm,
            "seed": int(plan.seed),
            "objectives": [n for n, _ in plan.objectives],
            "kinds": [k for _, k in plan.objectives],
            "model-config": json.dumps(asdict(plan.model)),
            "baseline-config": json.dumps(asdict(plan.baselines or baselines())),
            UNION_LAYOUT: encode_union_layout(plan_union_layout(plan)),
            "threads": int(plan.threads),
            **private,
        }
    )


def encode_local_update(
    update: LocalUpdate, objectives: Iterable[str], *, private: bool = False
) -> RecordDict:
    """A client's reply: ``w_k`` and the counts Flower's and the core's averaging need.

    ``private``: a private update's clipped changes and the objectives it pursues, no counts
    and no losses (module docstring).
    """
    metrics: dict[str, MetricRecordValues] = {}
    if not private:
        metrics[NUM_EXAMPLES] = int(update.num_examples)
    metrics[CLIENT_ID] = int(update.client_id)
    for s in objectives:
        if private:
            metrics[_PURSUES_PREFIX + s] = int(s in update.objective_examples)
        else:
            metrics[COUNT_PREFIX + s] = int(update.objective_examples.get(s, 0))
            metrics[LOSS_PREFIX + s] = float(update.losses.get(s, 0.0))
    return RecordDict(
        {
            ARRAYS: model_arrays(update.params, update.buffers),
            METRICS: MetricRecord(metrics),
        }
    )


def decode_local_update(
    content: RecordDict, objectives: Iterable[str], *, private: bool = False
) -> LocalUpdate:
    """Inverse of :func:`encode_local_update` (objectives with N_{k,s} = 0 left out).

    ``private``: the reply must be a private one; its pursued objectives map to 0.
    """
    try:
        params, buffers = model_from_arrays(content.array_records[ARRAYS])
        metrics = content.metric_records[METRICS]
        counts: dict[str, int] = {}
        losses: dict[str, float] = {}
        for s in objectives:
            if private:
                if int(cast(int, metrics[_PURSUES_PREFIX + s])):
                    counts[s] = 0
                continue
            n = int(cast(int, metrics[COUNT_PREFIX + s]))
            if n > 0:
                counts[s] = n
                if LOSS_PREFIX + s in metrics:
                    losses[s] = float(cast(float, metrics[LOSS_PREFIX + s]))
        return LocalUpdate(
            client_id=int(cast(int, metrics[CLIENT_ID])),
            params=params,
            buffers=buffers,
            num_examples=0 if private else int(cast(int, metrics[NUM_EXAMPLES])),
            objective_examples=counts,
            losses=losses,
        )
    except KeyError as exc:
        raise ProtocolError(f"baseline reply lacks {exc}") from None


# ---- client -------------------------------------------------------------------------------

# (client folder, layout JSON) → union view; a Ray actor serves many rounds.


def baseline_train(client: ClientData, cache_key: str, content: RecordDict) -> RecordDict:
    """One FedAvg/FedProx round at a client: local training from ``w^t`` on its union vectors.

    Parameters
    ----------
    client
        The client's data as stored (its own encoded features).
    cache_key
        Identifies ``client`` (its folder), for the union-view cache.
    content
        The ``train`` message's content.

    Returns
    -------
    RecordDict
        The reply (:func:`encode_local_update`).
    """
    import torch

    from fedcare_core.algorithms.fedavg.rounds import local_train
    from fedcare_core.nn.models import FullMLP

    try:
        config = content.config_records[CONFIG]
        if config[PROTOCOL] != PROTOCOL_VERSION:
            raise ProtocolError(f"protocol version {config[PROTOCOL]!r} is not {PROTOCOL_VERSION}")
        algorithm = str(config[ALGORITHM_KEY])
        if flower_strategy(algorithm) is None:
            raise ProtocolError(f"unknown baseline {algorithm!r}")
        names = tuple(cast(list[str], config["objectives"]))
        kinds = dict(zip(names, cast(list[str], config["kinds"]), strict=True))
        model_raw = json.loads(cast(str, config["model-config"]))
        model_raw["head_hidden"] = tuple(model_raw["head_hidden"])
        model_config = ModelConfig(**model_raw)
        base = baselines(**json.loads(cast(str, config["baseline-config"])))
        layout = cast(bytes, config[UNION_LAYOUT])
        seed = int(cast(int, config["seed"]))
        round_idx = int(cast(int, config[SERVER_ROUND]))
        mu = float(cast(float, config.get(PROXIMAL_MU, 0.0)))
        clip = None if DP_CLIP not in config else float(cast(float, config[DP_CLIP]))
        threads = int(cast(int, config.get("threads", 1)))
        params, buffers = model_from_arrays(content.array_records[ARRAYS])
    except KeyError as exc:
        raise ProtocolError(f"baseline train message lacks {exc}") from None
    union = union_view(client, cache_key, layout)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(threads)
    model = FullMLP(union.train.x_common.shape[1], names, model_config)
    update = local_train(
        model,
        params,
        buffers,
        union,
        kinds,
        base,
        prox_mu=mu,
        seed=seed,
        round_idx=round_idx,
        dp_clip=clip,
    )
    return encode_local_update(update, names, private=clip is not None)
