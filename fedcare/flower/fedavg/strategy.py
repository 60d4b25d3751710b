"""The server's side of FedAvg's family over Flower: Flower's strategies, the core's aggregation.

Flower's FedAvg and FedProx with the core's per-block aggregation
(:mod:`fedcare.flower.fedavg.wire` says why and what travels).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any

from flwr.app import (
    ArrayRecord,
    ConfigRecord,
    Message,
    MetricRecord,
    MetricRecordValues,
)
from flwr.serverapp import Grid
from flwr.serverapp.strategy import FedAvg, FedProx

from fedcare.flower.fedavg.wire import (
    EPSILON,
    decode_local_update,
    flower_strategy,
)
from fedcare.flower.federated_rounds import RoundHook
from fedcare.flower.messages import (
    LOSS_PREFIX,
    ProtocolError,
    model_arrays,
    model_from_arrays,
)
from fedcare.flower.round_floor import require_floor
from fedcare.flower.run_plan import RunPlan
from fedcare.flower.site_errors import error_text
from fedcare_core.algorithms.fedavg import rounds as core_fedavg
from fedcare_core.algorithms.fedavg.method import FedAvg as AveragingMethod
from fedcare_core.algorithms.fedavg.options import FedProxOptions
from fedcare_core.algorithms.union.common import build_full_mlp
from fedcare_core.config.method_options import baselines
from fedcare_core.nn.param_vectors import get_buffers, get_params, param_layout
from fedcare_core.privacy.mechanism import noise_stream
from fedcare_core.stage1.loop import RoundInfo, ServerState
from fedcare_core.stage1.privacy_rounds import RoundNoise

LOGGER = logging.getLogger(__name__)


def _server_step(algorithm: str) -> core_fedavg.Aggregate:
    """``algorithm``'s server step without DP (:meth:`FedAvg.aggregate`, or an override)."""
    from fedcare_core.algorithms import get_algorithm

    method = get_algorithm(algorithm)
    if not isinstance(method, AveragingMethod):
        raise ProtocolError(f"{algorithm!r} does not run FedAvg's rounds")
    return method.aggregate


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
        mu = FedProxOptions.of(plan.baselines or baselines()).prox_mu
        return UnionFedProx(plan, on_round=on_round, proximal_mu=mu)
    if strategy == "FedAvg":
        return UnionFedAvg(plan, on_round=on_round)
    raise ProtocolError(f"no Flower strategy for {plan.algorithm!r}")
