"""What a ServerApp hands back: the rounds (with ε under DP) and the accountant's state."""

import json

import numpy as np

from fedcare.flower.results import (
    read_dp_releases,
    round_from_dict,
    round_to_dict,
    write_stage1_result,
)
from fedcare_core.stage1.loop import RoundInfo, ServerState


def test_a_rounds_epsilon_round_trips_and_is_absent_without_dp():
    dp = RoundInfo(2, {"los": 1.0}, 0.25, {}, (0, 1), epsilon=1.5)
    plain = RoundInfo(2, {"los": 1.0}, 0.25, {"los": 0.3}, (0, 1))
    assert round_from_dict(json.loads(json.dumps(round_to_dict(dp)))) == dp
    assert round_from_dict(json.loads(json.dumps(round_to_dict(plain)))) == plain
    assert "epsilon" not in round_to_dict(plain)


def test_the_result_file_keeps_the_dp_releases(tmp_path):
    state = ServerState(np.zeros(3, np.float32), np.zeros(0, np.float32), dp_releases=4)
    write_stage1_result(tmp_path, state, [], converged=False, notes=[])
    assert read_dp_releases(tmp_path) == 4
    state.dp_releases = 0
    write_stage1_result(tmp_path, state, [], converged=False, notes=[])
    assert read_dp_releases(tmp_path) == 0
