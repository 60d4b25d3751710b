"""Choose a Stage 1 runner by backend name (``fedcare run --backend``), kept in a run folder.

:func:`make_stage1_runner` names the runner of a backend; :class:`CheckpointedFlowerStage1`
wraps a Flower runner so that its ServerApp keeps a Stage 1 checkpoint in a run folder
(``fedcare run --run-dir``) and a later run (``--resume``) continues after it: the Flower
counterpart of :class:`fedcare_core.resume.checkpoint.CheckpointedStage1`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol, cast

from fedcare.flower.flower_options import FlowerConfig
from fedcare.flower.run_plan import CheckpointTarget
from fedcare.flower.workspace import FlowerRunError
from fedcare_core.algorithms import get_algorithm
from fedcare_core.algorithms.base import Stage1Runner
from fedcare_core.config import ModelConfig, Stage1Config
from fedcare_core.config.backends import get_backend
from fedcare_core.data.clients import Federation
from fedcare_core.nn.training import ProgressFn
from fedcare_core.resume.checkpoint import CheckpointError, load_checkpoint, restore_checkpoint
from fedcare_core.resume.keys import stage1_fingerprint
from fedcare_core.stage1.loop import Stage1Result


def make_stage1_runner(backend: str, flower: FlowerConfig | None = None) -> Stage1Runner | None:
    """The Stage 1 runner of ``backend`` (None: the core's in-process runner).

    Raises
    ------
    ConfigError
        For an unknown backend name.
    """
    return cast("Stage1Runner | None", get_backend(backend).build(flower))


class CheckpointableRunner(Protocol):
    """A Flower Stage 1 runner whose ServerApp can keep a checkpoint (deployment, simulation)."""

    def __call__(
        self,
        federation: Federation,
        model_config: ModelConfig,
        config: Stage1Config,
        seed: int,
        progress: ProgressFn | None,
        *,
        checkpoint: CheckpointTarget | None = None,
    ) -> Stage1Result:
        """Run Stage 1, keeping (and resuming from) ``checkpoint`` when given."""
        ...


class CheckpointedFlowerStage1:
    """Stage 1 on a Flower backend, checkpointed after every round in ``path``.

    Before any process starts it reads the checkpoint (refusing one of another run, in one
    line) and says where the run starts; the ServerApp then restores it itself and writes a new
    one after every round (:class:`fedcare.flower.strategy.FedCareStrategy`). A run that fails
    (the SuperLink died, no round finished in time, …) fails with the runner's message and a
    last line naming the checkpoint kept and the ``--resume`` command.

    Parameters
    ----------
    runner
        The Flower runner (:class:`~fedcare.flower.deployment.DeploymentStage1Runner` or
        :class:`~fedcare.flower.simulation.SimulationStage1Runner`).
    path
        The checkpoint file (its folder must exist).
    say
        Told, in one line, where the run starts (e.g. printed to stderr).
    """

    def __init__(
        self,
        runner: CheckpointableRunner,
        path: Path,
        say: Callable[[str], None] | None = None,
    ) -> None:
        self.runner = runner
        self.path = Path(path).resolve()
        self.say = say

    def __call__(
        self,
        federation: Federation,
        model_config: ModelConfig,
        config: Stage1Config,
        seed: int,
        progress: ProgressFn | None,
        /,
    ) -> Stage1Result:
        """Run (or continue) Stage 1 on the Flower backend, checkpointed every round."""
        fingerprint = stage1_fingerprint(federation, model_config, config, seed)
        restore_checkpoint(self.path, fingerprint, config.rounds, self.say)
        target = CheckpointTarget(str(self.path), fingerprint)
        try:
            return self.runner(federation, model_config, config, seed, progress, checkpoint=target)
        except FlowerRunError as exc:
            raise FlowerRunError(f"{exc}\n{self.resume_hint(config.rounds)}") from None

    def resume_hint(self, rounds: int) -> str:
        """One line: what the run folder keeps, and the command that continues the run."""
        folder = self.path.parent
        try:
            snap = load_checkpoint(self.path)
        except CheckpointError as exc:
            return f"{exc}"
        if snap is None:
            kept = "no Stage 1 round finished"
        else:
            kept = f"the checkpoint of Stage 1 round {snap.round} of {rounds} is kept"
        return f"{kept} in {folder}: continue the run with `fedcare run --resume {folder}`"


def run_folder_runner(
    runner: Stage1Runner,
    algorithm: str,
    path: Path,
    say: Callable[[str], None] | None = None,
) -> Stage1Runner:
    """``runner`` (a Flower backend's) kept in the run folder checkpoint ``path``.

    FedCARE and FedCARE-B get a :class:`CheckpointedFlowerStage1`; the federated baselines'
    rounds are not checkpointed (their run folder keeps the configuration and the results,
    and a resumed run reruns them from the start, to the same results), so their runner is
    returned as it is.
    """
    if not get_algorithm(algorithm).runs_stage1:
        return runner
    return CheckpointedFlowerStage1(cast(CheckpointableRunner, runner), path, say)
