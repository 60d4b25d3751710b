"""FedCARE (paper Algorithms 1 and 2): federated rounds for w*, then per-client Stage 2.

Stage 1 runs in process (:func:`fedcare_core.stage1.loop.run_stage1`) or on a federated backend
(Flower); Stage 2 fine-tunes each client's personalised model, one independent task per client,
and each client deploys its own model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from fedcare_core.algorithms.base import Algorithm, Personalisation, Rounds, RunInputs, Stage1Runner
from fedcare_core.config import ExperimentConfig
from fedcare_core.data.clients import ClientData, Federation
from fedcare_core.nn.training import ProgressFn, objective_kinds
from fedcare_core.predict.predictors import ClientPredictor, CommonInput, PersonalInput
from fedcare_core.stage1.loop import Stage1Result, load_global_model, run_stage1
from fedcare_core.stage2.personalise import Stage2Result, fine_tune


def stage1_rounds(
    inputs: RunInputs, backend: Stage1Runner | None, progress: ProgressFn | None
) -> Rounds:
    """Algorithm 1 over the prepared federation, in process or on ``backend``."""
    config = inputs.config
    if backend is None:
        stage1 = run_stage1(
            inputs.federation, config.model, config.stage1, config.seed, progress=progress
        )
    else:
        stage1 = backend(inputs.federation, config.model, config.stage1, config.seed, progress)
    return Rounds(stage1)


def _stage2_start(
    stage1: Stage1Result, federation: Federation, config: ExperimentConfig
) -> tuple[dict[str, torch.Tensor], dict[str, dict[str, torch.Tensor]] | None]:
    """What every client's Stage 2 starts from: w*'s backbone, and its heads when asked.

    Parameters
    ----------
    stage1
        Stage 1's result.
    federation
        The clients (for the common input width).
    config
        The experiment configuration (model widths, ``stage2.head_init``).

    Returns
    -------
    tuple
        The backbone's state dict, and each objective's head state dict with
        ``stage2.head_init == "global"`` (else None).
    """
    model = load_global_model(stage1, federation.common_width, config.model)
    heads = None
    if config.stage2.head_init == "global":
        heads = {s: dict(head.state_dict()) for s, head in model.heads.items()}
    return model.backbone.state_dict(), heads


def stage2_backbone(
    stage1: Stage1Result, federation: Federation, config: ExperimentConfig
) -> dict[str, torch.Tensor]:
    """The converged backbone w* that every client's Stage 2 starts from (:func:`_stage2_start`)."""
    return _stage2_start(stage1, federation, config)[0]


def global_predictors(inputs: RunInputs, stage1: Stage1Result) -> list[ClientPredictor]:
    """The global model w* at every client, over the common features."""
    config = inputs.config.model
    model = load_global_model(stage1, inputs.federation.common_width, config)
    kinds = objective_kinds(inputs.federation)
    return [CommonInput(model, c.objectives, kinds, config) for c in inputs.federation.clients]


def stage1_grid_cost(clients: int) -> float:
    """A FedCARE (or FedCARE-B: the same Stage 1) grid job's relative cost at K = ``clients``."""
    return 0.13 * clients + 1.4


class Stage1Algorithm(Algorithm):
    """What FedCARE and FedCARE-B share: Stage 1's rounds (Algorithm 1) and their grid cost."""

    flower = True
    federated_rounds = "stage1"
    private_rounds = True
    runs_stage1 = True

    def grid_cost(self, clients: int) -> float:
        """Measured to grow slowly with K (FedCARE-B's: FedCARE's, a grid runs both at once)."""
        return stage1_grid_cost(clients)

    def rounds(
        self, inputs: RunInputs, backend: Stage1Runner | None, progress: ProgressFn | None
    ) -> Rounds:
        """Stage 1 (Algorithm 1)."""
        return stage1_rounds(inputs, backend, progress)


class FedCare(Stage1Algorithm):
    """FedCARE: Stage 1, then each client's Stage 2; each client deploys its own model."""

    name = "fedcare"
    personal_phase = "stage2"
    deploys = "personal"
    proposed = True
    site_federation = True

    def personalisation(self, inputs: RunInputs, rounds: Rounds) -> Personalisation:
        """Every client of the federation, sharing w*'s backbone and the objective kinds."""
        backbone, heads = _stage2_start(rounds.stage1, inputs.federation, inputs.config)
        shared = (backbone, objective_kinds(inputs.federation), heads)
        return Personalisation(inputs.federation.clients, shared)

    def personalise_client(
        self, shared: Any, client: ClientData, config: ExperimentConfig
    ) -> Stage2Result:
        """Algorithm 2 at one client (its random streams keyed by the seed and its id)."""
        backbone, kinds, heads = shared
        return _run_stage2_client(backbone, client, kinds, config, heads)

    def predictors(
        self, inputs: RunInputs, rounds: Rounds, personal: Sequence[Any]
    ) -> list[ClientPredictor]:
        """Each client's personalised model, over its common and private features."""
        by_client = {s.client_id: s for s in personal}
        wanted = [c.client_id for c in inputs.federation.clients]
        if len(personal) != len(wanted) or set(by_client) != set(wanted):
            raise ValueError(
                f"Stage 2 results for clients {sorted(by_client)}; expected one for each of "
                f"{wanted}"
            )
        kinds = objective_kinds(inputs.federation)
        return [
            PersonalInput(by_client[k].model, kinds, inputs.config.model).with_validation_outputs(
                by_client[k].validation_outputs
            )
            for k in wanted
        ]

    def stage2_record(self, personal: Sequence[Any]) -> list[Stage2Result]:
        """The clients' Stage 2 traces."""
        return list(personal)


def _run_stage2_client(
    backbone: Mapping[str, torch.Tensor],
    client: ClientData,
    kinds: Mapping[str, str],
    config: ExperimentConfig,
    global_heads: Mapping[str, Mapping[str, torch.Tensor]] | None = None,
) -> Stage2Result:
    """Fine-tune one client's personalised model (Algorithm 2).

    Parameters
    ----------
    backbone
        :func:`stage2_backbone`.
    client
        The client's data.
    kinds
        Objective kinds.
    config
        The experiment configuration.
    global_heads
        w*'s heads, for ``stage2.head_init == "global"``.

    Returns
    -------
    Stage2Result
        The client's personalised model and its μ* and loss traces.
    """
    return fine_tune(
        backbone, client, kinds, config.model, config.stage2, config.seed, global_heads
    )
