"""The server of a securely aggregated Stage 1: Flower's SecAgg+ workflow around the core's step.

Flower 1.42 has SecAgg+ only on its legacy path: a :class:`~flwr.server.LegacyContext`, a
legacy :class:`~flwr.server.strategy.Strategy` and :class:`~flwr.server.workflow.DefaultWorkflow`
with :class:`~flwr.server.workflow.SecAggPlusWorkflow` as its fit workflow. The workflow asks
the strategy for the round's ``FitIns``, runs SecAgg+'s four stages (setup, share keys,
collect masked vectors, unmask) and hands :meth:`SecureStage1Strategy.aggregate_fit` the
results of the clients whose vectors it summed, every one carrying **the same** aggregated
parameters (the mean of the sealed vectors) and only ``metrics={"client-id": k}``: no client's
update ever reaches this code. The strategy multiplies the mean by the number of vectors, reads
the per-objective sums (:func:`fedcare_core.secure_sums.unpack_sums`) and runs
:func:`fedcare_core.secure_sums.secure_server_step`.

Faults. SecAgg+ reconstructs the masks of clients lost during a round from the others' Shamir
shares while at least ``threshold`` (:class:`~fedcare_flower.secagg.SecAggSettings`) of the
round's clients answer; the round then holds the others' sum and its participants say who.
Below the threshold Flower halts the round without a result: :class:`SecureRoundWorkflow` ends
Stage 1 with :class:`SecureRoundError`, naming the round, the threshold and how many clients
were asked. A client that leaves after sending its masked vector but before unmasking spoils
the sum (Flower then removes only its pairwise masks): the sum's sentinel catches that and
the run fails the same way. Checkpoints: as :class:`~fedcare_flower.strategy.FedCareStrategy`,
after every round into the plan's file, and a restored run sends nothing for the rounds the
checkpoint holds. A round whose values exceeded the range is run again with a wider
range (:data:`fedcare_core.secure_sums.GROWTH`; the clients' updates are deterministic, so the
retry sums the same vectors).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from flwr.app import Context
from flwr.common import (
    EvaluateIns,
    FitIns,
    Parameters,
    Scalar,
    ndarrays_to_parameters,
    parameters_to_ndarrays,
)
from flwr.server import ClientManager, LegacyContext, ServerConfig, SimpleClientManager
from flwr.server.strategy import Strategy
from flwr.server.workflow import DefaultWorkflow, SecAggPlusWorkflow
from flwr.server.workflow.constant import MAIN_CONFIGS_RECORD, Key
from flwr.serverapp import Grid, ServerApp

from fedcare_core.param_vectors import get_buffers, get_params, param_layout
from fedcare_core.privacy import noise_stream
from fedcare_core.secure_sums import (
    GROWTH,
    MAX_ATTEMPTS,
    MODULUS,
    SecureSumError,
    SumLayout,
    initial_clip,
    next_clip,
    secure_server_step,
    unpack_sums,
)
from fedcare_core.stage1 import (
    RoundInfo,
    ServerState,
    Stage1Snapshot,
    build_model,
)
from fedcare_core.stage1_privacy import RoundNoise
from fedcare_flower.final_model import broadcast_final_model
from fedcare_flower.membership import Membership
from fedcare_flower.plan_checkpoint import restore_snapshot, save_snapshot
from fedcare_flower.polling import PollingGrid
from fedcare_flower.results import append_round, write_error, write_stage1_result
from fedcare_flower.run_plan import RunPlan
from fedcare_flower.secagg import (
    CLIENT_ID,
    SecAggSettings,
    SecureInstruction,
    encode_instruction,
    majority,
    secure_plan,
)
from fedcare_flower.server_app import PLAN_PATH_KEY

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
        self.clip = initial_clip(plan.stage1)
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
        :class:`~fedcare_flower.strategy.FedCareStrategy` does; before every round it drops the
        nodes that left and greets new ones.

        Raises
        ------
        SecureRoundError
            If fewer clients than a majority of the K the plan waits for are in the run.
        """
        self._nodes = []
        if self._skips(server_round):
            return
        self.round = server_round
        self._round_start = time.time()
        membership = self.membership
        if not self._waited:
            self._waited = True
            membership.discover(grid, wait_for_all=True)
        membership.drop_offline(server_round, grid.get_node_ids())
        membership.discover(grid, wait_for_all=False)
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
            )
            fits.append((proxies[node], FitIns(arrays, dict(encode_instruction(ins)))))
        self.asked = len(fits)
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
        try:
            sums = unpack_sums(mean * n, self.sum_layout, self.clip, self.settings.levels, n)
        except SecureSumError as exc:
            raise SecureRoundError(f"round {server_round}: {exc}") from None
        if sums.clipped:
            self.notes.append(
                f"round {server_round}: {sums.clipped} client(s) had values outside "
                f"±{self.clip:g}; the round ran again with ±{self.clip * GROWTH:g}"
            )
            LOGGER.warning(self.notes[-1])
            self.clip *= GROWTH
            self.outcome = "retry"
            return None, {}
        noise = None
        if self._dp is not None:
            noise = RoundNoise(self._dp, noise_stream(self._noise_secret, server_round))
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

        The range starts again from :func:`~fedcare_core.secure_sums.initial_clip` (a clip
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


class SecureRoundWorkflow(SecAggPlusWorkflow):
    """Flower's SecAgg+ round, run again on a clip and failing clearly without a sum.

    Parameters
    ----------
    strategy
        The run's :class:`SecureStage1Strategy` (its ``clip`` is read before every try).
    timeout
        Seconds each SecAgg+ stage waits for replies.
    """

    def __init__(self, strategy: SecureStage1Strategy, timeout: float | None) -> None:
        settings = strategy.settings
        super().__init__(
            num_shares=1.0,  # every client shares its secrets with all the others
            reconstruction_threshold=settings.threshold,
            max_weight=1.0,
            clipping_range=strategy.clip,
            quantization_range=settings.levels,
            modulus_range=MODULUS,
            timeout=timeout,
        )
        self.strategy = strategy

    def __call__(self, grid: Grid, context: Context) -> None:
        """One Stage 1 round: the strategy's handshakes, then up to :data:`MAX_ATTEMPTS` tries.

        Raises
        ------
        SecureRoundError
            If SecAgg+ halted (fewer clients than the threshold answered a stage), or the
            values still exceeded the range on the last try.
        """
        strategy = self.strategy
        round_config = context.state.config_records[MAIN_CONFIGS_RECORD]
        strategy.prepare_round(grid, int(round_config[Key.CURRENT_ROUND]))  # type: ignore[arg-type]
        for _ in range(MAX_ATTEMPTS):
            self.clipping_range = strategy.clip
            self.reconstruction_threshold = strategy.settings.threshold
            super().__call__(grid, context)
            if strategy.outcome in ("aggregated", "skipped"):
                return
            if strategy.outcome != "retry":
                settings = strategy.settings
                raise SecureRoundError(
                    f"round {strategy.round}: secure aggregation failed: fewer than "
                    f"{settings.threshold} of the {strategy.asked} clients asked answered every "
                    f"SecAgg+ stage (the reconstruction threshold; a round tolerates "
                    f"{settings.tolerated_losses} lost client(s))"
                )
        raise SecureRoundError(
            f"round {strategy.round}: values still outside ±{strategy.clip / GROWTH:g} after "
            f"{MAX_ATTEMPTS} tries"
        )


def run_secure_server(
    grid: Grid, context: Context, plan: RunPlan, on_round: RoundHook | None = None
) -> SecureStage1Strategy:
    """Run the plan's rounds under SecAgg+ and write the result folder; return the strategy.

    ``on_round(info, wall_s)`` is called after each round, once the round is on disk. On any
    failure the traceback goes to the result folder's error file and the exception propagates.
    """
    import traceback

    out = Path(plan.result_dir)

    def record(info: RoundInfo, wall_s: float) -> None:
        append_round(out, info, wall_s)
        if on_round is not None:
            on_round(info, wall_s)

    try:
        strategy = SecureStage1Strategy(plan, on_round=record)
        legacy = LegacyContext(
            context,
            config=ServerConfig(num_rounds=plan.stage1.rounds),
            strategy=strategy,
            client_manager=SimpleClientManager(),
        )
        workflow = DefaultWorkflow(fit_workflow=SecureRoundWorkflow(strategy, plan.round_timeout_s))
        polling = PollingGrid(grid, plan.pull_interval_s)
        workflow(polling, legacy)
        if plan.broadcast:
            note = broadcast_final_model(strategy, polling)
            if note is not None:
                strategy.notes.append(note)
        write_stage1_result(
            out, strategy.state, strategy.rounds, converged=strategy.converged, notes=strategy.notes
        )
    except BaseException:
        write_error(out, traceback.format_exc())
        raise
    return strategy


def build_secure_server_app(
    plan_path: str | Path | None = None, on_round: RoundHook | None = None
) -> ServerApp:
    """A ServerApp running :func:`run_secure_server` on the plan at ``plan_path``.

    ``on_round`` is only usable when the app runs in the caller's process (the simulation).
    """
    server_app = ServerApp()

    @server_app.main()
    def main(grid: Grid, context: Context) -> None:
        path = plan_path if plan_path is not None else str(context.run_config[PLAN_PATH_KEY])
        run_secure_server(grid, context, RunPlan.read(path), on_round)

    return server_app


app = build_secure_server_app()
