"""The coordinator's Stage 1 document: ε per round and a privacy section under DP."""

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from fedcare.flower.run_plan import RunPlan
from fedcare.sites.federation_run import FederationRun, stage1_document
from fedcare_core.config import ModelConfig, Stage1Config
from fedcare_core.nn.param_vectors import ParamLayout
from fedcare_core.privacy.mechanism import privacy_record
from fedcare_core.stage1.loop import RoundInfo, Stage1Result

SCHEMA = SimpleNamespace(dataset="diabetes130", config=SimpleNamespace(algorithm="fedcare"))


def _run(stage1: Stage1Config, rounds: list[RoundInfo], releases: int) -> FederationRun:
    plan = RunPlan(
        objectives=(("los", "regression"),),
        common_width=3,
        model=ModelConfig(),
        stage1=stage1,
        seed=0,
        num_clients=2,
        result_dir="/nowhere",
        sites=("north", "south"),
    )
    result = Stage1Result(
        params=np.zeros(3, np.float32),
        buffers=np.zeros(0, np.float32),
        rounds=rounds,
        converged=False,
        objectives=("los",),
        layout=ParamLayout(3, slice(0, 2), {"los": slice(2, 3)}),
    )
    sites = (SimpleNamespace(name="north", objectives=("los",)),) * 2
    return FederationRun(plan, result, sites, Path("/nowhere"), 0.0, 1.0, releases)


def test_a_dp_federation_document_carries_epsilon_and_the_privacy_record():
    stage1 = Stage1Config(rounds=2, dp_noise_multiplier=1.0)
    settings = stage1.privacy()
    assert settings is not None
    rounds = [
        RoundInfo(t, {"los": 1.0}, 0.5, {}, (0, 1), epsilon=settings.epsilon_after(t))
        for t in (1, 2)
    ]
    doc = stage1_document(_run(stage1, rounds, 2), SCHEMA)
    assert [r["epsilon"] for r in doc["rounds"]] == [r.epsilon for r in rounds]
    assert doc["privacy"] == privacy_record(settings, 2)
    assert doc["privacy"]["epsilon"] == rounds[-1].epsilon


def test_a_plain_federation_document_has_no_privacy_section():
    rounds = [RoundInfo(1, {"los": 1.0}, 0.5, {"los": 0.2}, (0, 1))]
    doc = stage1_document(_run(Stage1Config(rounds=1), rounds, 0), SCHEMA)
    assert "privacy" not in doc and "epsilon" not in doc["rounds"][0]
    assert doc["secure_aggregation"] is False


def test_a_secure_federation_plan_runs_the_secagg_apps_and_says_so(tmp_path):
    from fedcare.flower.deployment import write_app
    from fedcare.flower.flower_options import FlowerConfig
    from fedcare.flower.secagg import secure_plan
    from fedcare.sites.federation_run import federation_plan
    from fedcare_core.config import ExperimentConfig
    from fedcare_core.sites.schema import schema_for

    schema = schema_for(ExperimentConfig())
    sites = tuple(SimpleNamespace(name=n, objectives=("los",)) for n in ("a", "b"))
    plans = {
        secagg: federation_plan(
            schema,
            sites,
            min_sites=2,
            rounds=2,
            seed=0,
            flower=FlowerConfig(),
            result_dir=tmp_path,
            run_name="r",
            secagg=secagg,
        )
        for secagg in (False, True)
    }
    assert [secure_plan(plans[s]) for s in (False, True)] == [False, True]
    assert plans[True].stage1 == replace(plans[False].stage1, secagg=True)
    app = write_app(tmp_path, tmp_path / "plan.json", secure=True)
    assert "fedcare.flower.secagg_client:app" in (app / "pyproject.toml").read_text()
    rounds = [RoundInfo(1, {"los": 1.0}, 0.5, {"los": 0.2}, (0, 1))]
    run = _run(plans[True].stage1, rounds, 0)
    assert stage1_document(run, SCHEMA)["secure_aggregation"] is True


def test_a_run_the_sites_stopped_ends_with_its_own_sentence():
    from fedcare.sites.federation_run import stopped_by_sites

    short = "round 2: 1 of the 2 sites needed replied (site 'a'); missing: site 'b' (…)"
    assert stopped_by_sites(f"fedcare.flower.round_floor.TooFewSites: {short}") == short
    refused = "site 'b' refused the run by its policy's rule policy_unreadable: …"
    assert stopped_by_sites(f"fedcare.flower.membership.SiteRefused: {refused}") == refused
    assert stopped_by_sites("RuntimeError: something else") is None
    assert stopped_by_sites("") is None
