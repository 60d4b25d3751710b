from dataclasses import replace

import numpy as np
import pytest
from flwr.app import ArrayRecord, ConfigRecord, MetricRecord, RecordDict
from flwr.serverapp.strategy.strategy_utils import validate_message_reply_consistency

from fedcare.flower.messages import (
    ARRAYS,
    METRICS,
    NUM_EXAMPLES,
    PROTOCOL,
    PROTOCOL_VERSION,
    ProtocolError,
    decode_client_update,
    decode_identity,
    decode_train_instruction,
    encode_client_update,
    encode_identity,
    encode_train_instruction,
    model_arrays,
    model_from_arrays,
    round_metrics,
)
from fedcare_core.config import ModelConfig, Stage1Config
from fedcare_core.stage1.loop import ClientUpdate, ObjectiveUpdate, RoundInfo

OBJECTIVES = ("early_discharge", "readmission", "los")


def _update(client_id, objectives, p=5):
    rng = np.random.default_rng(client_id)
    return ClientUpdate(
        client_id=client_id,
        objectives={
            s: ObjectiveUpdate(rng.normal(size=p).astype(np.float32), 10 + i, 0.5 + i)
            for i, s in enumerate(objectives)
        },
        buffers=np.arange(3, dtype=np.float32),
        num_examples=40 + client_id,
    )


def test_client_update_round_trip_is_bit_exact():
    u = _update(2, ("readmission", "los"))
    back = decode_client_update(encode_client_update(u, OBJECTIVES), OBJECTIVES)
    assert back.client_id == 2 and back.num_examples == 42
    assert set(back.objectives) == {"readmission", "los"}
    for s, obj in u.objectives.items():
        np.testing.assert_array_equal(back.objectives[s].delta, obj.delta)
        assert back.objectives[s].num_examples == obj.num_examples
        assert back.objectives[s].loss == obj.loss
    np.testing.assert_array_equal(back.buffers, u.buffers)


def test_replies_of_clients_with_different_objectives_pass_flowers_reply_checks():
    replies = [
        encode_client_update(_update(0, ("early_discharge",)), OBJECTIVES),
        encode_client_update(_update(1, ("los", "readmission")), OBJECTIVES),
    ]
    for r in replies:
        assert len(r.array_records) == 1 and len(r.metric_records) == 1
        assert isinstance(r.metric_records[METRICS][NUM_EXAMPLES], int)
    validate_message_reply_consistency(replies, NUM_EXAMPLES, check_arrayrecord=True)
    # an objective the client does not pursue travels as an empty array with count 0
    assert replies[0].array_records[ARRAYS]["delta.los"].shape == (0,)
    assert replies[0].metric_records[METRICS]["num-examples.los"] == 0


def test_train_instruction_round_trip():
    params, buffers = np.linspace(0, 1, 7, dtype=np.float32), np.ones(2, dtype=np.float32)
    model, stage1 = ModelConfig(hidden=16), Stage1Config(rounds=4, local_steps=2)
    content = encode_train_instruction(
        server_round=3,
        seed=11,
        objectives=[("readmission", "binary"), ("los", "regression")],
        common_width=9,
        model=model,
        stage1=stage1,
        arrays=model_arrays(params, buffers),
    )
    instr = decode_train_instruction(content)
    assert (instr.server_round, instr.seed, instr.common_width) == (3, 11, 9)
    assert instr.objectives == ("readmission", "los")
    assert instr.kinds == {"readmission": "binary", "los": "regression"}
    assert instr.model == model and instr.stage1 == stage1
    np.testing.assert_array_equal(instr.params, params)
    np.testing.assert_array_equal(instr.buffers, buffers)
    p, b = model_from_arrays(model_arrays(params, buffers))
    np.testing.assert_array_equal(p, params)
    np.testing.assert_array_equal(b, buffers)


def test_identity_round_trip_and_protocol_mismatch():
    assert decode_identity(encode_identity(4)) == 4
    bad = encode_identity(4)
    bad.metric_records[METRICS][PROTOCOL] = 999
    with pytest.raises(ProtocolError, match="protocol"):
        decode_identity(bad)


def test_malformed_replies_raise_protocol_error():
    good = encode_client_update(_update(0, ("los",)), OBJECTIVES)
    extra = RecordDict(
        {
            ARRAYS: good.array_records[ARRAYS],
            METRICS: good.metric_records[METRICS],
            "more": MetricRecord({"x": 1}),
        }
    )
    with pytest.raises(ProtocolError, match="exactly one"):
        decode_client_update(extra, OBJECTIVES)
    missing = RecordDict({ARRAYS: ArrayRecord(), METRICS: good.metric_records[METRICS]})
    with pytest.raises(ProtocolError):
        decode_client_update(missing, OBJECTIVES)
    with pytest.raises(ProtocolError, match="lacks"):
        decode_train_instruction(RecordDict({"config": ConfigRecord({PROTOCOL: PROTOCOL_VERSION})}))
    with pytest.raises(ProtocolError, match="outside"):
        encode_client_update(_update(0, ("mortality",)), OBJECTIVES)


def test_round_metrics_report_lambda_and_d_sq_norm():
    info = RoundInfo(2, {"readmission": 0.25, "los": 0.75}, 0.5, {}, (0, 2), ("early_discharge",))
    m = round_metrics(info, OBJECTIVES)
    assert m["lambda.los"] == 0.75 and m["lambda.early_discharge"] == 0.0
    assert m["d-sq-norm"] == 0.5 and m["participants"] == 2 and m["missing-objectives"] == 1


def _dp_update(client_id, objectives, p=5):
    """What :func:`fedcare_core.stage1.privacy_rounds.private_update` sends: no counts, no
    losses."""
    u = _update(client_id, objectives, p)
    hidden = {s: ObjectiveUpdate(o.delta, 0, float("nan")) for s, o in u.objectives.items()}
    return ClientUpdate(client_id, hidden, u.buffers - 1.0, 0)


def test_a_dp_update_round_trips_without_counts_or_losses():
    from flwr.common import serde

    u = _dp_update(1, ("early_discharge", "los"))
    content = encode_client_update(u, OBJECTIVES)
    # the deployment's wire: the records through Flower's protobuf messages
    wire = serde.recorddict_from_proto(serde.recorddict_to_proto(content))
    for back in (decode_client_update(content, OBJECTIVES), decode_client_update(wire, OBJECTIVES)):
        assert back.client_id == 1 and back.num_examples == 0
        assert set(back.objectives) == {"early_discharge", "los"}  # pursued: a delta, no count
        for s, obj in u.objectives.items():
            assert back.objectives[s].delta.tobytes() == obj.delta.tobytes()
            assert back.objectives[s].num_examples == 0
            assert np.isnan(back.objectives[s].loss)
        assert back.buffers.tobytes() == u.buffers.tobytes()


def test_a_dp_reply_carries_no_count_and_passes_flowers_reply_checks():
    replies = [
        encode_client_update(_dp_update(0, ("readmission",)), OBJECTIVES),
        encode_client_update(_dp_update(1, OBJECTIVES), OBJECTIVES),
    ]
    validate_message_reply_consistency(replies, NUM_EXAMPLES, check_arrayrecord=True)
    for r in replies:
        metrics = r.metric_records[METRICS]
        counts = [v for k, v in metrics.items() if k.startswith(NUM_EXAMPLES)]
        assert len(counts) == 1 + len(OBJECTIVES) and set(counts) == {0}


def test_a_count_without_a_delta_is_refused():
    content = encode_client_update(_update(0, ("los",)), OBJECTIVES)
    content.metric_records[METRICS]["num-examples.readmission"] = 3
    with pytest.raises(ProtocolError, match="no delta"):
        decode_client_update(content, OBJECTIVES)


def _sent_stage1(stage1):
    content = encode_train_instruction(
        server_round=1,
        seed=0,
        objectives=[("los", "regression")],
        common_width=3,
        model=ModelConfig(),
        stage1=stage1,
        arrays=model_arrays(np.zeros(2, np.float32), np.zeros(0, np.float32)),
    )
    return decode_train_instruction(content).stage1


def test_dp_settings_travel_to_the_client_without_the_noise_seed():
    stage1 = Stage1Config(rounds=4, dp_epsilon=8.0, dp_delta=1e-6, dp_clip=0.25, dp_noise_seed=99)
    sent = _sent_stage1(stage1)
    assert sent == replace(stage1, dp_noise_seed=None)
    assert sent.privacy() == replace(stage1.privacy(), noise_seed=None)
    unset = _sent_stage1(Stage1Config(dp_noise_multiplier=1.5))
    assert unset == Stage1Config(dp_noise_multiplier=1.5)
    assert unset.dp_epsilon is None and isinstance(unset.dp_noise_multiplier, float)


def test_round_metrics_report_epsilon_under_dp_only():
    info = RoundInfo(1, {"los": 1.0}, 0.5, {}, (0,), epsilon=0.75)
    assert round_metrics(info, ("los",))["epsilon"] == 0.75
    assert "epsilon" not in round_metrics(replace(info, epsilon=None), ("los",))
