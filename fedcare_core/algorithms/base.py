"""What an algorithm declares: its phases, the model each client deploys, its Flower support.

A run has the same phases whatever the algorithm and wherever it executes
(:func:`fedcare_core.run.pipeline.run_algorithm` drives them):

1. **view** — the clients as the algorithm trains and scores them (the prepared federation, or
   the baselines' union view);
2. **rounds** — the federated rounds (Stage 1 for FedCARE), in process or on a federated
   backend; bounds without communication train here too (Centralised) or do nothing (Local);
3. **personalisation** — an optional per-client phase after the rounds (FedCARE's Stage 2,
   Local's per-client fits), one independent task per client, fanned out by the executor;
4. **deployment** — which model each client is scored with; evaluation is common to all.

An algorithm is one subclass of :class:`Algorithm` in its own module, listed in the registry
(:mod:`fedcare_core.algorithms`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np
from torch import nn

from fedcare_core.algorithms.union.features import UnionLayout
from fedcare_core.config import ExperimentConfig, ModelConfig, Stage1Config
from fedcare_core.data.clients import ClientData, Federation
from fedcare_core.nn.training import ProgressFn
from fedcare_core.predict.predictors import ClientPredictor
from fedcare_core.stage1.loop import Stage1Result
from fedcare_core.stage2.personalise import Stage2Result


class Stage1Runner(Protocol):
    """A federated backend for FedCARE's rounds (Algorithm 1), e.g. Flower's simulation."""

    def __call__(
        self,
        federation: Federation,
        model_config: ModelConfig,
        config: Stage1Config,
        seed: int,
        progress: ProgressFn | None,
        /,
    ) -> Stage1Result:
        """Run Stage 1 over ``federation``; return what the in-process loop returns."""
        ...


@runtime_checkable
class BaselineBackend(Protocol):
    """A Stage 1 runner that also runs the federated rounds of some baselines."""

    @property
    def federated_baselines(self) -> tuple[str, ...]:
        """The baselines it runs (those whose :attr:`Algorithm.flower` is set)."""
        ...

    def run_federated_baseline(
        self,
        algorithm: str,
        federation: Federation,
        layout: UnionLayout | None,
        config: ExperimentConfig,
        progress: ProgressFn | None,
    ) -> Stage1Result:
        """Run ``algorithm``'s rounds and return the global FullMLP and the round trace.

        Parameters
        ----------
        algorithm
            One of :attr:`federated_baselines`.
        federation
            The clients as prepared (their own encoded features; each client builds its
            union vectors from ``layout``, which holds column names, no rows).
        layout
            The union layout (:func:`~fedcare_core.algorithms.union.features.union_layout`);
            None: the clients' common features as they are (fedxgb).
        config
            The experiment configuration (rounds, seed, model, ``baselines``, ``stage1``).
        progress
            Called as ``progress("stage1", t, T)`` after each round.

        Returns
        -------
        Stage1Result
            What the in-process runner returns for the same configuration and seed.
        """
        ...


@dataclass(frozen=True)
class RunInputs:
    """What every phase of one run works on.

    Parameters
    ----------
    federation
        The prepared (and validated) federation: what the result document describes.
    view
        The clients as this algorithm trains and scores them (``federation`` itself, or the
        union view of the baselines that train one FullMLP over every feature).
    layout
        The union layout when ``view`` is the union view, else None.
    config
        The run's configuration.
    """

    federation: Federation
    view: Federation
    layout: UnionLayout | None
    config: ExperimentConfig


@dataclass(frozen=True)
class Rounds:
    """The rounds phase's outcome.

    Parameters
    ----------
    stage1
        The global model (or a stand-in without rounds) and the per-round trace.
    models
        Models the rounds trained that are not the global model: each client's own model
        (PAFNet), or the pooled model (Centralised).
    validation_outputs
        Per client, objective → its validation rows' predictions by models they did not
        choose (cross-fitting, where the rounds kept an epoch on validation); empty: none.
    """

    stage1: Stage1Result
    models: Sequence[nn.Module] = field(default_factory=tuple)
    validation_outputs: Sequence[Mapping[str, np.ndarray]] = field(default_factory=tuple)


@dataclass(frozen=True)
class Personalisation:
    """The per-client phase's work: the clients to map over and what every task shares."""

    clients: Sequence[ClientData]
    shared: Any


class Algorithm(ABC):
    """One method: its phases and what each client deploys.

    Subclasses set the class attributes and implement :meth:`rounds` and :meth:`predictors`;
    an algorithm with a per-client phase sets :attr:`personal_phase` and implements
    :meth:`personalisation` and :meth:`personalise_client`.
    """

    #: The name ``--algorithm`` and the configuration use.
    name: ClassVar[str]
    #: Federated rounds that a backend (Flower) can run; False: in process only.
    flower: ClassVar[bool] = False
    #: Whether its rounds run under client-level DP when the configuration asks for it
    #: (``stage1.dp_epsilon`` / ``dp_noise_multiplier``; :mod:`fedcare_core.privacy.mechanism`).
    private_rounds: ClassVar[bool] = False
    #: Whether its rounds are FedCARE's Stage 1 (:func:`fedcare_core.stage1.loop.run_stage1`):
    #: checkpointed in a run folder, resumable, cached by the flow, summable with SecAgg+, and
    #: training a shared backbone w* that is logged and registered of its own.
    runs_stage1: ClassVar[bool] = False
    #: Why the algorithm runs in process only (when :attr:`flower` is False).
    in_process_reason: ClassVar[str] = ""
    #: The per-client phase's name (``"stage2"``, ``"local"``, ``"own-trees"``), or None: what
    #: its progress reports and its per-client task runs (``<phase>-client<k>``) are called.
    personal_phase: ClassVar[str | None] = None
    #: ``"global"``: every client deploys one model; ``"personal"``: each its own.
    deploys: ClassVar[str] = "global"
    #: Flower's own strategy that runs its rounds (``"FedAvg"``, ``"FedProx"``), when they are
    #: not Algorithm 1's rounds (:attr:`runs_stage1`, FMGDA/FSMGDA on the union view).
    flower_strategy: ClassVar[str | None] = None
    #: The rounds a Flower backend runs for it: an entry of the ``fedcare.federated_rounds``
    #: group (``"stage1"``: Algorithm 1's; None: no Flower rounds, :attr:`flower` False).
    federated_rounds: ClassVar[str | None] = None
    #: The method the paper proposes: the experiment tables pair every other method with it.
    proposed: ClassVar[bool] = False
    #: Whether a federation of real sites runs it (``fedcare federation run``: Stage 1 at the
    #: coordinator over Flower, the per-client phase at each site on its own data).
    site_federation: ClassVar[bool] = False
    #: A grid job's relative cost at K = 10 (row passes in millions; for scheduling only).
    cost_at_ten_clients: ClassVar[float] = 2.0
    #: Whether its cost grows with K (False: the same rows whatever K, as the bounds').
    cost_scales_with_clients: ClassVar[bool] = True
    #: The objective kinds it can train (:mod:`fedcare_core.objectives`); None: every installed
    #: kind, through the kind's own head and loss (a network's).
    objective_kinds: ClassVar[tuple[str, ...] | None] = None

    def refuses_objective(self, name: str, kind: str) -> str | None:
        """Why it cannot train objective ``name`` of ``kind`` (None: it can)."""
        if self.objective_kinds is None or kind in self.objective_kinds:
            return None
        return (
            f"algorithm {self.name!r} trains {' and '.join(self.objective_kinds)} objectives; "
            f"{name!r} is a {kind} objective"
        )

    def grid_cost(self, clients: int) -> float:
        """Its relative cost at K = ``clients``, for running a grid's longest jobs first."""
        if not self.cost_scales_with_clients:
            return self.cost_at_ten_clients
        return self.cost_at_ten_clients * clients / 10

    def flower_stage1(self, stage1: Stage1Config, federation: Federation) -> Stage1Config:
        """The Stage 1 settings its rounds take over Flower (FMGDA's batches cover every row)."""
        return stage1

    def view(self, federation: Federation) -> tuple[Federation, UnionLayout | None]:
        """The clients as this algorithm trains and scores them (default: as prepared)."""
        return federation, None

    def accepts(self, backend: object) -> bool:
        """Whether ``backend`` (a federated backend) can run this algorithm's rounds."""
        return self.flower

    @abstractmethod
    def rounds(
        self, inputs: RunInputs, backend: Stage1Runner | None, progress: ProgressFn | None
    ) -> Rounds:
        """Run the federated rounds (in process when ``backend`` is None)."""

    def personalisation(self, inputs: RunInputs, rounds: Rounds) -> Personalisation:
        """The per-client phase's clients and shared inputs (only with :attr:`personal_phase`)."""
        raise NotImplementedError(f"{self.name} has no per-client phase")

    def personalise_client(self, shared: Any, client: ClientData, config: ExperimentConfig) -> Any:
        """One client's task of the per-client phase (independent of every other client's)."""
        raise NotImplementedError(f"{self.name} has no per-client phase")

    @abstractmethod
    def predictors(
        self, inputs: RunInputs, rounds: Rounds, personal: Sequence[Any]
    ) -> list[ClientPredictor]:
        """The model each client of ``inputs.federation`` deploys, in client order."""

    def stage1_record(
        self, inputs: RunInputs, rounds: Rounds, personal: Sequence[Any]
    ) -> Stage1Result:
        """The ``rounds``/``stage1`` part of the document (default: the rounds' result)."""
        return rounds.stage1

    def stage2_record(self, personal: Sequence[Any]) -> list[Stage2Result]:
        """The ``stage2`` part of the document (only FedCARE's Stage 2 fills it)."""
        return []


class FederatedBaseline(Algorithm):
    """A baseline whose rounds a :class:`BaselineBackend` that lists it can run."""

    flower = True
    federated_rounds = "stage1"  # FMGDA/FSMGDA: Algorithm 1's rounds on the union view

    def accepts(self, backend: object) -> bool:
        """Only a backend that runs this baseline's rounds (see :class:`BaselineBackend`)."""
        return isinstance(backend, BaselineBackend) and self.name in backend.federated_baselines


def with_validation_outputs(
    predictors: Sequence[ClientPredictor], outputs: Sequence[Mapping[str, np.ndarray]]
) -> list[ClientPredictor]:
    """Each predictor with its client's cross-fitted validation predictions (none: unchanged).

    Parameters
    ----------
    predictors
        One per client, in client order.
    outputs
        One mapping per client (objective → predictions of its validation rows), or empty.

    Returns
    -------
    list of ClientPredictor
        The predictors, carrying ``outputs`` for calibration.
    """
    if not outputs:
        return list(predictors)
    return [p.with_validation_outputs(o) for p, o in zip(predictors, outputs, strict=True)]
