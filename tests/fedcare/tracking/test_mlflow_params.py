import pytest

from fedcare.tracking.mlflow_params import (
    MAX_PARAM_VALUE_LENGTH,
    TRUNCATION_MARK,
    flatten_params,
    param_value,
)
from fedcare_core.config import ExperimentConfig


def test_nested_config_flattens_to_dotted_keys():
    params = flatten_params(ExperimentConfig().to_dict())
    assert params["stage1.global_lr"] == "0.01"
    assert params["stage2.optimizer"] == "adam"
    assert params["data.dataset"] == "diabetes130"
    assert params["data.cover_all_objectives"] == "true"
    assert params["data.max_patients"] == "null"
    assert params["model.head_hidden"] == "[64, 32]"
    assert params["algorithm"] == "fedcare"
    assert all(isinstance(v, str) for v in params.values())
    assert list(params) == sorted(params)


def test_long_values_are_cut_to_the_limit():
    value = param_value("x" * 2000)
    assert len(value) == MAX_PARAM_VALUE_LENGTH
    assert value.endswith(TRUNCATION_MARK)
    assert param_value(list(range(5)), max_length=20) == "[0, 1, 2, 3, 4]"
    assert len(param_value(list(range(100)), max_length=20)) == 20
    with pytest.raises(ValueError, match="max_length"):
        param_value("x", max_length=3)


def test_overlong_keys_are_refused():
    with pytest.raises(ValueError, match="key longer"):
        flatten_params({"a" * 200: {"b" * 60: 1}})
