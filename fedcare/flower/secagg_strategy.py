"""The strategy of a securely aggregated Stage 1: the core's step on SecAgg+'s sums.

:class:`SecureStage1Strategy` is a legacy Flower :class:`~flwr.server.strategy.Strategy` for
:class:`~fedcare.flower.secagg_server.SecureRoundWorkflow`: it admits the round's clients
(:class:`~fedcare.flower.membership.Membership`), sends each its client id and the round's
range and levels, and reads the per-objective sums out of the one aggregated vector SecAgg+
hands :meth:`SecureStage1Strategy.aggregate_fit`; it never holds a client's update. See
:mod:`fedcare.flower.secagg_server` for the protocol and its faults.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from flwr.common import (
    EvaluateIns,
    FitIns,
    Parameters,
    Scalar,
    ndarrays_to_parameters,
    parameters_to_ndarrays,
)
from flwr.server import ClientManager
from flwr.server.strategy import Strategy
from flwr.serverapp import Grid

from fedcare.flower.membership import Membership
from fedcare.flower.plan_checkpoint import restore_snapshot, save_snapshot
from fedcare.flower.round_floor import require_floor
from fedcare.flower.run_plan import RunPlan
from fedcare.flower.secagg import (
    CLIENT_ID,
    SecAggSettings,
    SecureInstruction,
    encode_instruction,
    majority,
    secure_plan,
)
from fedcare_core.nn.param_vectors import get_buffers, get_params, param_layout
from fedcare_core.privacy.mechanism import noise_stream
from fedcare_core.stage1.loop import (
    RoundInfo,
    ServerState,
    Stage1Snapshot,
    build_model,
)
from fedcare_core.stage1.privacy_rounds import RoundNoise
from fedcare_core.stage1.secure_sums import (
    GROWTH,
    SecureSumError,
    SumLayout,
    initial_clip,
    next_clip,
    secure_server_step,
    unpack_sums,
)

LOGGER = logging.getLogger(__name__)
RoundHook = Callable[[RoundInfo, float], None]


class SecureRoundError(RuntimeError):
    """A securely aggregated round that produced no usable sum."""


class SecureStage1Strategy(Strategy):
    """Stage 1 of FedCARE whose rounds are summed by SecAgg+ (legacy Strategy API).

    Parameters
    ----------
    plan
        Objectives, model and Stage 1 configuration (``stage1.secagg`` on), seed, K, timeouts.
    on_round
        Called with each round's :class:`RoundInfo` and wall time after the global step.

    Attributes
    ----------
    clip
        The range ``c`` of the next try.
    last_aggregate
        The last aggregated vector :meth:`aggregate_fit` received (the mean of the sealed
        vectors; None before the first).
    ranges
        The range ``c`` each completed round was summed with.
    """

    def __init__(self, plan: RunPlan, *, on_round: RoundHook | None = None) -> None:
        super().__init__()
        if not secure_plan(plan):
            raise ValueError("SecureStage1Strategy needs a plan with stage1.secagg")
        self.plan = plan
        self.objectives = plan.objective_names
        model = build_model(plan.common_width, self.objectives, plan.model, plan.seed)
        self.layout = param_layout(model)
        self.state = ServerState(get_params(model), get_buffers(model))
        self.sum_layout = SumLayout(
            self.objectives, self.state.params.size, self.state.buffers.size
        )
        #: Levels (and the most clients) of the run: every client of the plan, every site.
        self.run_settings = SecAggSettings.for_clients(len(plan.client_ids))
        #: The current round's settings (its threshold is a majority of the clients asked).
        self.settings = self.run_settings
        #: Distributed DP: every site of the plan adds a share of the noise.
        self.noise_sites = len(plan.client_ids)
        self.clip = initial_clip(plan.stage1, sites=self.noise_sites)
        dp = plan.stage1.privacy()
        self._dp = dp
        self._noise_secret = dp.noise_source() if dp is not None else 0
        self.rounds: list[RoundInfo] = []
        self.notes: list[str] = []
        self.membership = Membership(plan, lambda line: self.notes.append(line))
        self._nodes: list[int] = []  # the nodes the round asks, in client-id order
        self.last_aggregate: np.ndarray | None = None
        self._waited = False  # for the K clients, before the first round this run sends
        self.ranges: list[float] = []
        self.converged = False
        self.stopped = False
        self.round = 0
        self.asked = 0
        self.outcome = ""  # of the last try: "", "aggregated", "retry", "skipped"
        self._round_start = 0.0
        self._on_round = on_round
        self.resumed_round = 0  # rounds 1..this were restored from the plan's checkpoint
        self._restore()

    @property
    def clients(self) -> dict[int, int]:
        """Node id → client id, for the nodes still in the run."""
        return self.membership.clients

    def prepare_round(self, grid: Grid, server_round: int) -> None:
        """Before a round's first try: handshakes, departures and the round's SecAgg+ settings.

        Before round 1 it waits for the K clients' handshakes (or the start-up timeout), as
        :class:`~fedcare.flower.strategy.FedCareStrategy` does; before every round it drops the
        nodes that left and greets new ones.

        Raises
        ------
        TooFewSites
            If fewer clients than the plan's floor (at least 2) joined or are left to ask.
        SecureRoundError
            If fewer clients than a majority of the K the plan waits for are in the run.
        """
        self._nodes = []
        if self._skips(server_round):
            return
        self.round = server_round
        self._round_start = time.time()
        membership = self.membership
        first = not self._waited
        if first:
            self._waited = True
            membership.discover(grid, wait_for_all=True)
        membership.drop_offline(server_round, grid.get_node_ids())
        membership.discover(grid, wait_for_all=False)
        require_floor(
            self.plan, None if first else server_round, membership.clients.values(),
            membership.absence, verb="are left to ask",
        )  # fmt: skip
        needed = majority(self.plan.num_clients)
        if len(membership.clients) < needed:
            raise SecureRoundError(
                f"round {server_round}: {len(membership.clients)} client(s) in the run; secure "
                f"aggregation needs at least {needed} of the {self.plan.num_clients}"
            )
        self._nodes = membership.nodes_by_client()
        self.settings = self.run_settings.for_round(len(self._nodes))

    def _skips(self, server_round: int) -> bool:
        """Whether the round sends nothing: Stage 1 stopped, or the checkpoint holds it."""
        return self.stopped or server_round <= self.resumed_round

    # ---- legacy Strategy API ----------------------------------------------------------------

    def initialize_parameters(self, client_manager: ClientManager) -> Parameters | None:
        """``w^0`` as ``[params, buffers]``."""
        return ndarrays_to_parameters([self.state.params, self.state.buffers])

    def configure_fit(
        self, server_round: int, parameters: Parameters, client_manager: ClientManager
    ) -> list[tuple[Any, FitIns]]:
        """The round's instruction for each client :meth:`prepare_round` admitted.

        Each carries the client id the handshake assigned its node; none once Stage 1 stopped.
        """
        self.outcome = ""
        self.asked = 0
        if self._skips(server_round):
            self.outcome = "skipped"
            return []
        proxies = {c.node_id: c for c in client_manager.all().values()}
        arrays = ndarrays_to_parameters([self.state.params, self.state.buffers])
        fits = []
        for node in self._nodes:
            if node not in proxies:
                continue  # left between the handshake and now: SecAgg+ never asks it
            ins = SecureInstruction(
                server_round=server_round,
                seed=self.plan.seed,
                client_id=self.membership.clients[node],
                objectives=self.objectives,
                kinds=self.plan.kinds,
                common_width=self.plan.common_width,
                model=self.plan.model,
                stage1=self.plan.stage1,
                clip=self.clip,
                levels=self.settings.levels,
                noise_sites=0 if self._dp is None else self.noise_sites,
                noise_seed=None if self._dp is None else self._dp.noise_seed,
            )
            fits.append((proxies[node], FitIns(arrays, dict(encode_instruction(ins)))))
        self.asked = len(fits)
        if self.asked < 2:
            raise SecureRoundError(
                f"round {server_round}: {self.asked} client(s) left to ask; secure aggregation "
                "needs at least 2"
            )
        # The threshold is a majority of the clients actually asked (one may have left since
        # the handshake); SecAgg+ reads it after this call.
        self.settings = self.run_settings.for_round(self.asked)
        return fits

    def aggregate_fit(
        self,
        server_round: int,
        results: list[tuple[Any, Any]],
        failures: list[Any],
    ) -> tuple[Parameters | None, dict[str, Scalar]]:
        """From SecAgg+'s aggregate (the mean of the sealed vectors) to ``w^{t+1}``.

        Raises
        ------
        SecureRoundError
            If the results do not all carry one aggregate, or its check value fails.
        TooFewSites
            If fewer clients were summed than the plan's floor (at least 2): the sum of one
            client's vector is that vector.
        """
        if not results:
            raise SecureRoundError(f"round {server_round}: secure aggregation returned no sum")
        shared = {id(res.parameters) for _, res in results}
        if len(shared) != 1:
            raise SecureRoundError(f"round {server_round}: results carry more than one vector")
        mean = parameters_to_ndarrays(results[0][1].parameters)[0].astype(np.float64)
        self.last_aggregate = mean
        n = len(results)
        participants = sorted(self._participant(server_round, p, r) for p, r in results)
        require_floor(self.plan, server_round, participants, self.membership.absence)
        try:
            sums = unpack_sums(mean * n, self.sum_layout, self.clip, self.settings.levels, n)
        except SecureSumError as exc:
            raise SecureRoundError(f"round {server_round}: {exc}") from None
        if sums.clipped:
            # Routine, not a problem: the range is a guess before any round has been summed
            # (secure_sums' INITIAL_CLIP) and adapts; nothing is lost, so no note or warning.
            LOGGER.debug(
                "round %d: secure aggregation's fixed-point range ±%g was too narrow for %d "
                "client(s)' values, so the round is summed again at ±%g (the range adapts to "
                "the updates; no update is lost)",
                server_round,
                self.clip,
                sums.clipped,
                self.clip * GROWTH,
            )
            self.clip *= GROWTH
            self.outcome = "retry"
            return None, {}
        noise = None
        if self._dp is not None:
            rng = noise_stream(self._noise_secret, server_round)
            noise = RoundNoise(self._dp, rng, sites=self.noise_sites)
        self.state, info = secure_server_step(
            self.state,
            sums,
            self.layout,
            self.plan.stage1,
            server_round,
            participants,
            noise,
        )
        self.ranges.append(self.clip)
        self.clip = next_clip(sums, self.clip, self.plan.stage1)
        LOGGER.info(
            "round %d: summed at ±%g (error ≤ %.2g per value); next range ±%g",
            server_round,
            self.ranges[-1],
            self.settings.error_bound(self.ranges[-1]),
            self.clip,
        )
        self._finish(info)
        return ndarrays_to_parameters([self.state.params, self.state.buffers]), {}

    def _participant(self, server_round: int, proxy: Any, res: Any) -> int:
        """The client id of a result's node (the handshake's; the reply must agree)."""
        client_id = self.membership.clients.get(proxy.node_id)
        claimed = res.metrics.get(CLIENT_ID)
        if client_id is None or claimed != client_id:
            raise SecureRoundError(
                f"round {server_round}: node {proxy.node_id} replied as client {claimed}, "
                f"its handshake said {client_id}"
            )
        return client_id

    def configure_evaluate(
        self, server_round: int, parameters: Parameters, client_manager: ClientManager
    ) -> list[tuple[Any, EvaluateIns]]:
        """No federated evaluation in Stage 1."""
        return []

    def aggregate_evaluate(
        self, server_round: int, results: list[tuple[Any, Any]], failures: list[Any]
    ) -> tuple[float | None, dict[str, Scalar]]:
        """Nothing to aggregate."""
        return None, {}

    def evaluate(
        self, server_round: int, parameters: Parameters
    ) -> tuple[float, dict[str, Scalar]] | None:
        """No centralised evaluation."""
        return None

    # ---- bookkeeping ------------------------------------------------------------------------

    def _finish(self, info: RoundInfo) -> None:
        self.rounds.append(info)
        self.outcome = "aggregated"
        if info.missing_objectives:
            self.notes.append(
                f"round {info.round}: no update for {', '.join(info.missing_objectives)}; "
                "their heads kept their last values"
            )
        lost = self.asked - len(info.participants)
        if lost:
            self.notes.append(
                f"round {info.round}: {lost} client(s) lost during the round; SecAgg+ "
                f"unmasked the sum of the other {len(info.participants)}"
            )
        LOGGER.info(
            "round %d (secure): λ*=%s ‖d‖²=%.3g participants=%s",
            info.round,
            {k: round(v, 4) for k, v in info.lambdas.items()},
            info.d_sq_norm,
            list(info.participants),
        )
        self.converged = info.d_sq_norm <= self.plan.stage1.epsilon
        if self.converged:
            self.stopped = True
        self._save(info.round)
        if self._on_round is not None:
            self._on_round(info, time.time() - self._round_start)

    def _restore(self) -> None:
        """Continue after the plan's checkpoint, if its file holds one of this run.

        The range starts again from :func:`~fedcare_core.stage1.secure_sums.initial_clip` (a clip
        on the first resumed round only reruns it wider).

        Raises
        ------
        CheckpointError
            If the file is unreadable, belongs to another run, or cannot continue this one.
        """
        snap = restore_snapshot(self.plan, self.state)
        if snap is None:
            return
        self.state, self.rounds, self.notes = snap.state, list(snap.rounds), list(snap.notes)
        self.converged = snap.converged
        self.resumed_round = snap.round
        self.stopped = snap.converged or snap.round >= self.plan.stage1.rounds

    def _save(self, server_round: int) -> None:
        """Write the checkpoint of ``server_round`` (when the plan names a file)."""
        snap = Stage1Snapshot(
            server_round, self.state, tuple(self.rounds), self.converged, tuple(self.notes)
        )
        save_snapshot(self.plan, snap)
