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
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict
from typing import Any, cast

from flwr.app import (
    ArrayRecord,
    ConfigRecord,
    Message,
    MetricRecord,
    MetricRecordValues,
    RecordDict,
)
from flwr.serverapp import Grid
from flwr.serverapp.strategy import FedAvg, FedProx

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
from fedcare.flower.round_floor import require_floor
from fedcare.flower.run_plan import RunPlan
from fedcare.flower.site_errors import error_text
from fedcare_core.algorithms.fedavg import rounds as core_fedavg
from fedcare_core.algorithms.fedavg.method import FedAvg as AveragingMethod
from fedcare_core.algorithms.fedavg.rounds import LocalUpdate
from fedcare_core.algorithms.union.common import build_full_mlp
from fedcare_core.algorithms.union.features import UnionLayout
from fedcare_core.config import BaselineConfig, ModelConfig
from fedcare_core.data.clients import ClientData
from fedcare_core.nn.param_vectors import get_buffers, get_params, param_layout
from fedcare_core.privacy.mechanism import noise_stream
from fedcare_core.stage1.loop import RoundInfo, ServerState
from fedcare_core.stage1.privacy_rounds import RoundNoise

LOGGER = logging.getLogger(__name__)


def flower_strategy(algorithm: str) -> str | None:
    """Flower's own strategy that runs ``algorithm``'s rounds (``Algorithm.flower_strategy``).

    None: Algorithm 1's rounds (FedCARE, FedCARE-B; FMGDA/FSMGDA on the union view), which
    :mod:`fedcare.flower.strategy` runs, or a name no algorithm has.
    """
    from fedcare_core.algorithms import algorithm_names, get_algorithm

    return get_algorithm(algorithm).flower_strategy if algorithm in algorithm_names() else None


def _server_step(algorithm: str) -> core_fedavg.Aggregate:
    """``algorithm``'s server step without DP (:meth:`FedAvg.aggregate`, or an override)."""
    from fedcare_core.algorithms import get_algorithm

    method = get_algorithm(algorithm)
    if not isinstance(method, AveragingMethod):
        raise ProtocolError(f"{algorithm!r} does not run FedAvg's rounds")
    return method.aggregate


PROXIMAL_MU = "proximal-mu"  # the key Flower's FedProx.configure_train sets
DP_CLIP = "dp-clip"  # present only under differential privacy
_PURSUES_PREFIX = "pursues."  # a private reply's objectives, without counts
EPSILON = "epsilon"

RoundHook = Callable[[RoundInfo, float], None]


# ---- wire format --------------------------------------------------------------------------


def encode_union_layout(layout: UnionLayout) -> bytes:
    """The union layout as UTF-8 JSON bytes (Flower logs a config's bytes as ``<bytes>``).

    Column names hold a NUL separator, which JSON escapes.
    """
    doc = {"common_width": layout.common_width, "columns": list(layout.columns)}
    return json.dumps(doc).encode()


def _decode_union_layout(raw: bytes) -> UnionLayout:
    """Inverse of :func:`encode_union_layout`."""
    doc = json.loads(raw.decode())
    return UnionLayout(int(doc["common_width"]), tuple(str(c) for c in doc["columns"]))


def plan_union_layout(plan: RunPlan) -> UnionLayout:
    """The union layout a baseline plan carries."""
    if plan.union_common_width is None:
        raise ProtocolError("the run plan has no union layout")
    return UnionLayout(plan.union_common_width, plan.union_columns)


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
            "baseline-config": json.dumps(asdict(plan.baselines or BaselineConfig())),
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
_UNION_CACHE: dict[tuple[str, bytes], ClientData] = {}


def union_view(client: ClientData, cache_key: str, layout: bytes) -> ClientData:
    """The client's union view for the encoded ``layout`` (cached per process).

    Raises
    ------
    ProtocolError
        If the client's common block does not have the layout's width.
    """
    from fedcare_core.algorithms.union.features import union_client

    key = (cache_key, layout)
    if key not in _UNION_CACHE:
        union = _decode_union_layout(layout)
        if client.common_encoder.width != union.common_width:
            raise ProtocolError(
                f"client {client.client_id} encodes {client.common_encoder.width} common "
                f"columns, the server's union layout has {union.common_width}"
            )
        for stale in [k for k in _UNION_CACHE if k[0] == cache_key]:
            del _UNION_CACHE[stale]  # another run's layout for the same folder
        _UNION_CACHE[key] = union_client(client, union)
    return _UNION_CACHE[key]


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
        base = BaselineConfig(**json.loads(cast(str, config["baseline-config"])))
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


# ---- server -------------------------------------------------------------------------------


class UnionFedAvg(FedAvg):
    """Flower's FedAvg with the core's per-block averaging (module docstring says why).

    Everything but :meth:`aggregate_train` is Flower's: sampling (all connected nodes, once
    ``min_available_nodes`` = K have joined), the round loop of
    :meth:`~flwr.serverapp.strategy.Strategy.start` and message construction.
    :meth:`configure_train` only notes ``w^t`` and which nodes were asked. Under differential
    privacy (``plan.stage1.privacy()``) the noise secret is drawn here, once for the run, and
    each round's noise is :func:`~fedcare_core.privacy.mechanism.noise_stream` of it and the round.

    Parameters
    ----------
    plan
        The run plan (objectives, FullMLP width, K).
    on_round
        Called with each round's :class:`RoundInfo` and wall time after aggregation.
    **kwargs
        Passed to Flower's strategy (e.g. FedProx's ``proximal_mu``).
    """

    def __init__(self, plan: RunPlan, *, on_round: RoundHook | None = None, **kwargs: Any):
        k = plan.num_clients
        super().__init__(
            fraction_train=1.0,
            fraction_evaluate=0.0,  # clients are evaluated in process on the final model
            min_train_nodes=k,
            min_available_nodes=k,
            **kwargs,
        )
        self.plan = plan
        self.objectives = plan.objective_names
        model = build_full_mlp(plan.common_width, self.objectives, plan.model, plan.seed)
        self.layout = param_layout(model)
        self.state = ServerState(get_params(model), get_buffers(model))
        self.rounds: list[RoundInfo] = []
        self.notes: list[str] = []
        self.converged = False  # FedAvg/FedProx run their T rounds (no ‖d‖² stopping rule)
        self.privacy = plan.stage1.privacy()
        self._noise_secret = self.privacy.noise_source() if self.privacy is not None else 0
        self._on_round = on_round
        self._aggregate = _server_step(plan.algorithm)
        self._asked: set[int] = set()
        self._round_start = 0.0

    def initial_arrays(self) -> ArrayRecord:
        """``w^0``: the FullMLP the in-process runner starts from (same seed and stream)."""
        return model_arrays(self.state.params, self.state.buffers)

    def configure_train(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        """Flower's messages; remember ``w^t`` (the base of ‖w^{t+1} − w^t‖²) and the nodes."""
        self._round_start = time.time()
        # The accountant's count outlives the arrays Flower hands back each round.
        self.state = ServerState(*model_from_arrays(arrays), dp_releases=self.state.dp_releases)
        messages = list(super().configure_train(server_round, arrays, config, grid))
        self._asked = {m.metadata.dst_node_id for m in messages}
        return messages

    def aggregate_train(
        self, server_round: int, replies: Iterable[Message]
    ) -> tuple[ArrayRecord | None, MetricRecord | None]:
        """The core's FedAvg server step on the replies, in client-id order.

        Raises
        ------
        TooFewSites
            If no client replied, or one under differential privacy (the plan's floor).
        """
        replies = list(replies)
        valid = [m for m in replies if not m.has_error()]
        errors = [m for m in replies if m.has_error()]
        LOGGER.info("round %d: %d results and %d failures", server_round, len(valid), len(errors))
        for msg in errors:
            node = msg.metadata.src_node_id
            self._note(f"round {server_round}: node {node} failed: {error_text(msg.error)}")
        answered = {m.metadata.src_node_id for m in replies}
        for node in sorted(self._asked - answered):
            self._note(f"round {server_round}: node {node} did not reply in time")
        private = self.privacy is not None
        updates = sorted(
            (decode_local_update(m.content, self.objectives, private=private) for m in valid),
            key=lambda u: u.client_id,
        )
        present = [u.client_id for u in updates]
        require_floor(self.plan, server_round, present, lambda _client: "no update")
        noise = None
        if self.privacy is not None:
            noise = RoundNoise(self.privacy, noise_stream(self._noise_secret, server_round))
        releases = self.state.dp_releases
        params, buffers, info = core_fedavg.server_round(
            self.state.params,
            self.state.buffers,
            updates,
            self.layout,
            self.objectives,
            server_round,
            noise,
            releases=releases,
            aggregate=self._aggregate,
        )
        released = int(info.epsilon is not None)
        self.state = ServerState(params, buffers, dp_releases=releases + released)
        self.rounds.append(info)
        if self._on_round is not None:
            self._on_round(info, time.time() - self._round_start)
        metrics: dict[str, MetricRecordValues] = {
            LOSS_PREFIX + s: float(v) for s, v in info.losses.items()
        }
        metrics["d-sq-norm"] = float(info.d_sq_norm)
        metrics["participants"] = len(info.participants)
        if info.epsilon is not None:
            metrics[EPSILON] = float(info.epsilon)
        return model_arrays(params, buffers), MetricRecord(metrics)

    def _note(self, text: str) -> None:
        self.notes.append(text)
        LOGGER.warning(text)


class UnionFedProx(UnionFedAvg, FedProx):
    """Flower's FedProx (it sends ``proximal-mu``) with :class:`UnionFedAvg`'s aggregation."""


def make_strategy(plan: RunPlan, on_round: RoundHook | None = None) -> UnionFedAvg:
    """The plan's algorithm's Flower strategy: FedProx (μ = ``plan.baselines.prox_mu``), FedAvg."""
    strategy = flower_strategy(plan.algorithm)
    if strategy == "FedProx":
        mu = (plan.baselines or BaselineConfig()).prox_mu
        return UnionFedProx(plan, on_round=on_round, proximal_mu=mu)
    if strategy == "FedAvg":
        return UnionFedAvg(plan, on_round=on_round)
    raise ProtocolError(f"no Flower strategy for {plan.algorithm!r}")
