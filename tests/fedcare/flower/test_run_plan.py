"""The RunPlan the ServerApp reads: every setting survives its JSON file."""

from fedcare.flower.run_plan import RunPlan
from fedcare_core.config import ModelConfig, Stage1Config


def _plan(stage1: Stage1Config) -> RunPlan:
    return RunPlan(
        objectives=(("los", "regression"),),
        common_width=3,
        model=ModelConfig(head_hidden=(4, 2)),
        stage1=stage1,
        seed=1,
        num_clients=2,
        result_dir="/nowhere",
    )


def test_dp_settings_round_trip_through_the_plan_file(tmp_path):
    for stage1 in (
        Stage1Config(),
        Stage1Config(dp_epsilon=4.0, dp_delta=1e-6, dp_clip=0.5, dp_noise_seed=7),
        Stage1Config(dp_noise_multiplier=1.1),
    ):
        plan = _plan(stage1)
        back = RunPlan.read(plan.write(tmp_path / "plan.json"))
        assert back == plan
        assert back.stage1.privacy() == stage1.privacy()
