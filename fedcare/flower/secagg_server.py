"""The server of a securely aggregated Stage 1: Flower's SecAgg+ workflow around the core's step.

Flower 1.42 has SecAgg+ only on its legacy path: a :class:`~flwr.server.LegacyContext`, a
legacy :class:`~flwr.server.strategy.Strategy` and :class:`~flwr.server.workflow.DefaultWorkflow`
with :class:`~flwr.server.workflow.SecAggPlusWorkflow` as its fit workflow. The workflow asks
the strategy for the round's ``FitIns``, runs SecAgg+'s four stages (setup, share keys,
collect masked vectors, unmask) and hands :meth:`SecureStage1Strategy.aggregate_fit` the
results of the clients whose vectors it summed, every one carrying **the same** aggregated
parameters (the mean of the sealed vectors) and only ``metrics={"client-id": k}``: no client's
update ever reaches this code. The strategy multiplies the mean by the number of vectors, reads
the per-objective sums (:func:`fedcare_core.stage1.secure_sums.unpack_sums`) and runs
:func:`fedcare_core.stage1.secure_sums.secure_server_step`.

Faults. SecAgg+ reconstructs the masks of clients lost during a round from the others' Shamir
shares while at least ``threshold`` (:class:`~fedcare.flower.secagg.SecAggSettings`) of the
round's clients answer; the round then holds the others' sum and its participants say who.
Below the threshold Flower halts the round without a result: :class:`SecureRoundWorkflow` ends
Stage 1 with :class:`SecureRoundError`, naming the round, the threshold and how many clients
were asked. A client that leaves after sending its masked vector but before unmasking spoils
the sum (Flower then removes only its pairwise masks): the sum's sentinel catches that and
the run fails the same way. Checkpoints: as :class:`~fedcare.flower.strategy.FedCareStrategy`,
after every round into the plan's file, and a restored run sends nothing for the rounds the
checkpoint holds. A round whose values exceeded the range is run again with a wider
range (:data:`fedcare_core.stage1.secure_sums.GROWTH`; the clients' updates are deterministic, so
the retry sums the same vectors).
"""

from __future__ import annotations

from pathlib import Path

from flwr.app import Context
from flwr.server import LegacyContext, ServerConfig, SimpleClientManager
from flwr.server.workflow import DefaultWorkflow, SecAggPlusWorkflow
from flwr.server.workflow.constant import MAIN_CONFIGS_RECORD, Key
from flwr.serverapp import Grid, ServerApp

from fedcare.flower.final_model import finish_stage1
from fedcare.flower.polling import PollingGrid
from fedcare.flower.run_plan import RunPlan
from fedcare.flower.secagg import MAX_ATTEMPTS, MODULUS
from fedcare.flower.secagg_strategy import RoundHook, SecureRoundError, SecureStage1Strategy
from fedcare.flower.server_app import (
    errors_recorded,
    plan_server_app,
    recorded_rounds,
    replies_recorded,
)
from fedcare_core.stage1.secure_sums import GROWTH


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
        self.strategy = strategy
        super().__init__(
            num_shares=1.0,  # every client shares its secrets with all the others
            reconstruction_threshold=settings.threshold,
            max_weight=1.0,
            clipping_range=strategy.clip,
            quantization_range=settings.levels,
            modulus_range=MODULUS,
            timeout=timeout,
        )

    @property
    def reconstruction_threshold(self) -> int:
        """The current round's threshold (:attr:`SecureStage1Strategy.settings`)."""
        return self.strategy.settings.threshold

    @reconstruction_threshold.setter
    def reconstruction_threshold(self, value: float) -> None:
        """Ignored: the strategy sets the threshold for each round."""

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
    with errors_recorded(plan):
        strategy = SecureStage1Strategy(plan, on_round=recorded_rounds(plan, on_round))
        legacy = LegacyContext(
            context,
            config=ServerConfig(num_rounds=plan.stage1.rounds),
            strategy=strategy,
            client_manager=SimpleClientManager(),
        )
        workflow = DefaultWorkflow(fit_workflow=SecureRoundWorkflow(strategy, plan.round_timeout_s))
        on_reply = replies_recorded(strategy, plan) if plan.sites else None
        polling = PollingGrid(grid, plan.pull_interval_s, on_reply=on_reply)
        workflow(polling, legacy)
        finish_stage1(strategy, polling, broadcast_from=strategy if plan.broadcast else None)
    return strategy


def build_secure_server_app(
    plan_path: str | Path | None = None, on_round: RoundHook | None = None
) -> ServerApp:
    """A ServerApp running :func:`run_secure_server` (see :func:`plan_server_app`)."""
    return plan_server_app(run_secure_server, plan_path, on_round)


app = build_secure_server_app()
