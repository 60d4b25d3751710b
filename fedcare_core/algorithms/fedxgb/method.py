"""fedxgb: federated gradient-boosted trees, the comparator a hospital consortium tries first.

The rounds build one ensemble per objective over the common features, by bagging or cyclic
boosting (:mod:`fedcare_core.algorithms.fedxgb.rounds`; T = ``stage1.rounds``). The per-client
phase stacks each client's own trees on all its features on the federated margin
(:mod:`fedcare_core.algorithms.fedxgb.personal`). Each client deploys
:class:`~fedcare_core.algorithms.fedxgb.predictor.TreeInput`, calibrated and packaged like
every model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from fedcare_core.algorithms.base import (
    BaselineBackend,
    FederatedBaseline,
    Personalisation,
    Rounds,
    RunInputs,
    Stage1Runner,
)
from fedcare_core.algorithms.bounds.rounds import no_rounds
from fedcare_core.algorithms.fedxgb.bundle import pack_trees, unpack_trees
from fedcare_core.algorithms.fedxgb.options import FedXgbOptions
from fedcare_core.algorithms.fedxgb.personal import personal_boosters
from fedcare_core.algorithms.fedxgb.predictor import TreeInput, TreeModels
from fedcare_core.algorithms.fedxgb.rounds import TreeRounds, run_rounds
from fedcare_core.algorithms.fedxgb.trees import Ensemble
from fedcare_core.config import ExperimentConfig
from fedcare_core.data.clients import ClientData
from fedcare_core.nn.training import ProgressFn, objective_kinds
from fedcare_core.predict.predictors import ClientPredictor
from fedcare_core.stage1.types import Stage1Result


class FedXgb(FederatedBaseline):
    """Federated boosted trees, with each client's own trees stacked on them."""

    name = "fedxgb"
    flower_strategy = "FedXgbBagging"
    federated_rounds = "trees"
    site_federation = True
    personal_phase = "own-trees"  # each client boosts its own trees (progress, task names)
    deploys = "personal"
    cost_at_ten_clients = 1.0
    objective_kinds = ("binary", "regression")  # XGBoost's objectives (trees.TreeSettings)

    def rounds(
        self, inputs: RunInputs, backend: Stage1Runner | None, progress: ProgressFn | None
    ) -> Rounds:
        """The federated trees, in process or on a backend that runs them (Flower)."""
        config = inputs.config
        kinds = objective_kinds(inputs.federation)
        notes: list[str] = []
        if isinstance(backend, BaselineBackend):
            result = backend.run_federated_baseline(
                self.name, inputs.federation, None, config, progress
            )
            trees, notes = unpack_trees(result, kinds), list(result.notes)
        else:
            trees = run_rounds(
                inputs.federation,
                kinds,
                config.baselines,
                config.stage1.rounds,
                config.seed,
                progress,
            )
        return Rounds(self._record(inputs, trees, notes))

    def _record(self, inputs: RunInputs, trees: TreeRounds, notes: list[str]) -> Stage1Result:
        """The rounds' record; its parameters are the trees (:func:`pack_trees`)."""
        base = inputs.config.baselines
        counts = {s: len(e.trees) for s, e in trees.ensembles.items()}
        note = (
            f"fedxgb ({FedXgbOptions.of(base).fedxgb_strategy}): trees per objective {counts}, "
            "the ensemble of "
            f"the round the holders' validation loss chose {trees.chosen}"
        )
        record = no_rounds(inputs.federation.objective_names, [note, *notes])
        return replace(record, params=pack_trees(trees), rounds=list(trees.rounds))

    @staticmethod
    def _ensembles(inputs: RunInputs, rounds: Rounds) -> dict[str, Ensemble]:
        """The ensembles the rounds' record carries (also one a site received: a broadcast)."""
        return unpack_trees(rounds.stage1, objective_kinds(inputs.federation)).ensembles

    def personalisation(self, inputs: RunInputs, rounds: Rounds) -> Personalisation:
        """Every client, sharing the ensembles and the objective kinds."""
        kinds = objective_kinds(inputs.federation)
        return Personalisation(inputs.federation.clients, (self._ensembles(inputs, rounds), kinds))

    def personalise_client(
        self, shared: Any, client: ClientData, config: ExperimentConfig
    ) -> dict[str, bytes]:
        """The client's own trees per objective (early-stopped on its validation rows)."""
        ensembles, kinds = shared
        return personal_boosters(client, ensembles, kinds, config.baselines, config.seed)

    def predictors(
        self, inputs: RunInputs, rounds: Rounds, personal: Sequence[Any]
    ) -> list[ClientPredictor]:
        """Each client's federated trees with its own on top."""
        ensembles = self._ensembles(inputs, rounds)
        federated = {s: e.to_bytes() for s, e in ensembles.items()}
        kinds = objective_kinds(inputs.federation)
        out: list[ClientPredictor] = []
        for client, own in zip(inputs.federation.clients, personal, strict=True):
            mine = {s: federated[s] for s in client.objectives if s in federated}
            model = TreeModels(client.objectives, mine, own)
            out.append(TreeInput(model, kinds, client.private_encoder.width))
        return out
