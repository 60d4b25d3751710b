"""fedxgb over Flower equals its in-process run.

These run the real ServerApp code (Flower's FedXgbBagging, with the core's trees) and real
ClientApps on an in-process LoopbackGrid. Real runtimes: ``tests/e2e/test_multisite_fedxgb.py``
(SuperLink and SuperNodes of three sites, TLS); the Simulation Engine was checked by hand
(docs/DESIGN.md, "Federated boosted trees").
Equivalence is checked on the whole results document (minus timings): byte-identical JSON.
"""

from __future__ import annotations

import json

import pytest
from flwr.serverapp.strategy import FedXgbBagging

from fedcare.flower.fedxgb import trees
from fedcare.flower.site_messages import assigned_client_id
from fedcare_core.config import ExperimentConfig
from fedcare_core.run.pipeline import run_experiment
from tests.fedcare.flower.conftest import small_config
from tests.fedcare.flower.test_baselines_flower import LoopbackBackend, _document
from tests.fedcare_core.synthetic import PARTITION


def _config(strategy: str = "bagging", rounds: int = 3) -> ExperimentConfig:
    return small_config(rounds=rounds).with_overrides(
        algorithm="fedxgb",
        baselines={"fedxgb_strategy": strategy, "fedxgb_depth": 3, "fedxgb_personal_trees": 5},
    )


@pytest.mark.parametrize("strategy", ["bagging", "cyclic"])
def test_flower_apps_give_the_in_process_results_document(
    small_cohort, tmp_path, task_identity, strategy
):
    cfg = _config(strategy)
    local = run_experiment(small_cohort, PARTITION, cfg)
    backend = LoopbackBackend(str(tmp_path))
    flower = run_experiment(small_cohort, PARTITION, cfg, stage1_runner=backend)
    assert _document(flower) == _document(local)
    assert backend.progress == [("stage1", t, 3) for t in (1, 2, 3)]
    assert isinstance(backend.strategy, FedXgbBagging)
    assert type(backend.strategy).start is FedXgbBagging.start  # Flower's round loop
    assert list(tmp_path.iterdir()) == []
    sent = backend.grid.sent
    k = cfg.data.clients
    assert sum(m.metadata.message_type == "train" for m in sent) == 3 * k
    assert sum(m.metadata.message_type == "evaluate" for m in sent) == 3 * k
    # Round 1 carries no ensemble; later rounds carry each objective's.
    first = next(m for m in sent if m.metadata.message_type == "train")
    assert len(first.content.array_records["arrays"]) == 0
    # A client is told what it boosts, never what the others pursue.
    for m in sent:
        if m.metadata.message_type == "train":
            plan = json.loads(m.content.config_records["config"][trees.BOOST])
            assert set(plan) <= {str(assigned_client_id(m.content))}


def test_a_client_that_lost_its_margins_sends_the_same_trees(small_cohort, tmp_path, task_identity):
    cfg = _config("bagging")
    backend = LoopbackBackend(str(tmp_path))
    kept = run_experiment(small_cohort, PARTITION, cfg, stage1_runner=backend)

    class Forgetful(LoopbackBackend):
        def run_federated_baseline(self, *args, **kwargs):
            original = trees._margins

            def fresh(run_id, data_key):
                trees._MARGINS.clear()
                return original(run_id, data_key)

            trees._margins = fresh
            try:
                return super().run_federated_baseline(*args, **kwargs)
            finally:
                trees._margins = original

    lost = run_experiment(small_cohort, PARTITION, cfg, stage1_runner=Forgetful(str(tmp_path)))
    assert _document(lost) == _document(kept)
