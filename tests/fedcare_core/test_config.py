"""Configuration checks: every field's type and range, from dicts, overrides and ``validate()``."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from fedcare_core.config import (
    DATASET_OBJECTIVES,
    DATASETS,
    RANGES,
    SECTIONS,
    DataConfig,
    ExperimentConfig,
    ModelConfig,
    Stage1Config,
    Stage2Config,
    load_config_file,
)
from fedcare_core.config.fields import field_kinds
from fedcare_core.config.method_options import baselines
from fedcare_core.config.presets import baby_config
from fedcare_core.errors import ConfigError
from fedcare_core.files.output_paths import check_output_dir, check_output_file

NAN, INF = float("nan"), float("inf")

#: (document, words the one-line message must contain: the parameter and the value).
BAD_DOCUMENTS: list[tuple[Any, tuple[str, ...]]] = [
    # wrong types: int, float, bool and str fields
    ({"stage1": {"rounds": "5"}}, ("stage1.rounds", "integer", "'5'")),
    ({"stage1": {"rounds": 2.5}}, ("stage1.rounds", "integer", "2.5")),
    ({"stage1": {"rounds": 2.0}}, ("stage1.rounds", "integer", "2")),
    ({"stage1": {"rounds": True}}, ("stage1.rounds", "integer", "true")),
    ({"stage1": {"rounds": [5]}}, ("stage1.rounds", "JSON array")),
    ({"stage1": {"rounds": {"a": 1}}}, ("stage1.rounds", "JSON object")),
    ({"stage1": {"rounds": None}}, ("stage1.rounds", "null")),
    ({"stage1": {"local_lr": "0.01"}}, ("stage1.local_lr", "number", "'0.01'")),
    ({"stage1": {"local_lr": False}}, ("stage1.local_lr", "number", "false")),
    ({"data": {"cover_all_objectives": 1}}, ("data.cover_all_objectives", "true or false")),
    ({"data": {"cover_all_objectives": "yes"}}, ("data.cover_all_objectives", "'yes'")),
    ({"data": {"dataset": 3}}, ("data.dataset", "string", "3")),
    ({"stage1": {"solver": ["exact"]}}, ("stage1.solver", "JSON array")),
    ({"algorithm": 7}, ("algorithm", "string", "7")),
    ({"seed": "0"}, ("seed", "integer", "'0'")),
    ({"model": {"head_hidden": [64]}}, ("model.head_hidden", "2 integers")),
    ({"model": {"head_hidden": [64, 32.5]}}, ("model.head_hidden", "2 integers")),
    ({"model": {"head_hidden": [64, 0]}}, ("model.head_hidden", "[1, ", "0")),
    # NaN and ±inf, for every kind of float field
    ({"stage1": {"local_lr": NAN}}, ("stage1.local_lr", "finite", "nan")),
    ({"stage1": {"local_lr": INF}}, ("stage1.local_lr", "finite", "inf")),
    ({"stage1": {"global_lr": -INF}}, ("stage1.global_lr", "finite", "-inf")),
    ({"stage2": {"lr": INF}}, ("stage2.lr", "finite")),
    ({"data": {"rho": NAN}}, ("data.rho", "finite", "nan")),
    ({"baselines": {"pafnet_mask_init": INF}}, ("baselines.pafnet_mask_init", "finite")),
    ({"model": {"dropout": NAN}}, ("model.dropout", "finite")),
    # ranges
    ({"data": {"max_patients": -5}}, ("data.max_patients", "[1, ", "-5")),
    ({"data": {"clients": 0}}, ("data.clients", "[2, 1000]", "0")),
    ({"data": {"clients": 1}}, ("data.clients", "[2, 1000]", "1")),  # not a federation
    ({"data": {"clients": 1001}}, ("data.clients", "[2, 1000]", "1001")),
    ({"stage1": {"rounds": 10**30}}, ("stage1.rounds", "[1, 100,000]", str(10**30))),
    ({"stage1": {"local_steps": 100_001}}, ("stage1.local_steps", "[1, 100,000]")),
    ({"stage1": {"batch_size": 10**7 + 1}}, ("stage1.batch_size", "[1, 10,000,000]")),
    ({"stage2": {"epochs": 10**6}}, ("stage2.epochs", "[1, 100,000]")),
    ({"baselines": {"bound_epochs": 10**6}}, ("baselines.bound_epochs", "[1, 100,000]")),
    ({"data": {"max_patients": 10**9 + 1}}, ("data.max_patients", "[1, 1,000,000,000]")),
    ({"model": {"hidden": 10**6}}, ("model.hidden", "[1, 65,536]")),
    ({"threads": 10**4}, ("threads", "[1, 1024]")),
    # objectives: at most the dataset's three, and a cover that can be
    ({"stage1": {"rounds": 0}}, ("stage1.rounds", "[1, ", "0")),
    ({"stage1": {"local_steps": -1}}, ("stage1.local_steps", "[1, ")),
    ({"stage1": {"batch_size": 0}}, ("stage1.batch_size", "[1, ")),
    ({"stage1": {"local_lr": 0.0}}, ("stage1.local_lr", "> 0", "0")),
    ({"stage1": {"epsilon": -1e-8}}, ("stage1.epsilon", "≥ 0")),
    ({"stage2": {"epochs": 0}}, ("stage2.epochs", "[1, ")),
    ({"stage2": {"patience": 0}}, ("stage2.patience", "[1, ")),
    ({"stage2": {"weight_decay": -1.0}}, ("stage2.weight_decay", "≥ 0")),
    ({"data": {"rho": 1.0}}, ("data.rho", "(0, 1)", "1")),
    ({"data": {"rho": 0}}, ("data.rho", "(0, 1)", "0")),
    ({"data": {"train_fraction": 1.2}}, ("data.train_fraction", "(0, 1)")),
    ({"data": {"val_fraction": -0.1}}, ("data.val_fraction", "[0, 1)")),
    ({"data": {"train_fraction": 0.8, "val_fraction": 0.3}}, ("data.train_fraction", "test")),
    ({"data": {"dirichlet_alpha": 0.0}}, ("data.dirichlet_alpha", "> 0")),
    ({"data": {"objectives_per_client": 0}}, ("data.objectives_per_client", "[1, ")),
    ({"model": {"dropout": 1.0}}, ("model.dropout", "[0, 1)")),
    ({"model": {"hidden": 0}}, ("model.hidden", "[1, ")),
    ({"model": {"max_categories": 0}}, ("model.max_categories", "[1, ")),
    ({"baselines": {"pafnet_self_weight": 1.5}}, ("baselines.pafnet_self_weight", "[0, 1]")),
    ({"baselines": {"max_local_steps": 0}}, ("baselines.max_local_steps", "[1, ")),
    ({"baselines": {"prox_mu": -0.1}}, ("baselines.prox_mu", "≥ 0")),
    ({"baselines": {"bound_patience": 0}}, ("baselines.bound_patience", "[1, ")),
    ({"seed": -1}, ("seed", "-1")),
    ({"seed": 2**40}, ("seed", str(2**40))),
    ({"threads": 0}, ("threads", "[1, ")),
    # choices, unknown keys, shapes
    ({"stage1": {"solver": "newton"}}, ("stage1.solver", "'newton'")),
    ({"stage1": {"nope": 1}}, ("stage1", "nope")),
    ({"nope": 1}, ("nope",)),
    ({"stage1": [1, 2]}, ("stage1", "JSON array")),
    ({"stage1": 3}, ("stage1", "JSON object")),
    ([1, 2], ("JSON object", "JSON array")),
    (3, ("JSON object", "3")),
]


@pytest.mark.parametrize(("document", "words"), BAD_DOCUMENTS)
def test_a_bad_document_is_one_clear_error(document: Any, words: tuple[str, ...]) -> None:
    with pytest.raises(ConfigError) as err:
        ExperimentConfig.from_dict(document)
    message = str(err.value)
    assert "\n" not in message
    for word in words:
        assert word in message, (word, message)


@pytest.mark.parametrize(
    ("document", "words"), [(d, w) for d, w in BAD_DOCUMENTS if isinstance(d, dict)]
)
def test_the_same_values_as_overrides_are_refused(document: Any, words: tuple[str, ...]) -> None:
    with pytest.raises(ConfigError) as err:
        ExperimentConfig().with_overrides(**document)
    assert words[0] in str(err.value)


@pytest.mark.parametrize(
    ("make_section", "words"),
    [
        (lambda: Stage1Config(rounds=2.5), "stage1.rounds"),  # type: ignore[arg-type]
        (lambda: Stage1Config(local_lr=INF), "stage1.local_lr"),
        (lambda: Stage2Config(lr=NAN), "stage2.lr"),
        (lambda: DataConfig(max_patients=-5), "data.max_patients"),
        (lambda: DataConfig(cover_all_objectives=1), "data.cover_all_objectives"),  # type: ignore[arg-type]
        (lambda: ModelConfig(head_hidden=[64, 32]), "model.head_hidden"),  # type: ignore[arg-type]
        # Built in the test: the baselines section's class is composed from the installed
        # methods' options, anew when a test installs or forgets one.
        (lambda: baselines(lr=-1.0), "baselines.lr"),
    ],
)
def test_validate_checks_constructed_sections(make_section: Any, words: str) -> None:
    section = make_section()
    name = next(n for n, cls in SECTIONS.items() if isinstance(section, cls))
    with pytest.raises(ConfigError, match=words):
        ExperimentConfig(**{name: section}).validate()


def test_every_number_field_has_a_range() -> None:
    for name, cls in SECTIONS.items():
        for field_name, kind in field_kinds(cls).items():
            if kind.base in (int, float, tuple):
                assert field_name in RANGES[name], f"{name}.{field_name} has no range"


def test_every_count_field_has_an_upper_bound() -> None:
    for name, cls in SECTIONS.items():
        for field_name, kind in field_kinds(cls).items():
            if kind.base in (int, tuple):
                assert RANGES[name][field_name].high is not None, f"{name}.{field_name}"
    assert RANGES[""]["threads"].high is not None and RANGES[""]["seed"].high is not None


def test_the_objective_counts_are_the_datasets() -> None:
    from fedcare_core.data.diabetes130.definition import DIABETES130_OBJECTIVES
    from fedcare_core.data.mimic3.definition import MIMIC3_OBJECTIVES

    assert DATASET_OBJECTIVES == {
        "diabetes130": len(DIABETES130_OBJECTIVES),
        "mimic3": len(MIMIC3_OBJECTIVES),
    }
    assert set(DATASET_OBJECTIVES) == set(DATASETS)


def test_defaults_unchanged_and_round_trip() -> None:
    config = ExperimentConfig().validate()
    assert (config.stage1.rounds, config.stage1.local_lr, config.stage1.global_lr) == (
        100,
        1e-3,
        1e-2,
    )
    assert ExperimentConfig.from_dict(config.to_dict()) == config
    baby = baby_config()
    assert ExperimentConfig.from_dict(json.loads(json.dumps(baby.to_dict()))) == baby
    # an integer where a float belongs is that float
    lr = ExperimentConfig.from_dict({"stage1": {"global_lr": 1}}).stage1.global_lr
    assert isinstance(lr, float) and lr == 1.0
    assert math.isclose(ExperimentConfig.from_dict({"data": {"rho": 0.3}}).data.rho or 0, 0.3)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[1, 2]", "JSON array"),
        ("3", "JSON object"),
        ("{not json", "cannot read config"),
        ('{"stage1": {"rounds": NaN}}', "stage1.rounds"),
        ('{"stage1": {"local_lr": Infinity}}', "stage1.local_lr"),
    ],
)
def test_a_config_file_error_names_the_file(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "c.json"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config_file(path)
    assert str(path) in str(err.value) and words in str(err.value)
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config_file(tmp_path)  # a folder


def test_output_locations_are_probed_and_left_clean(tmp_path: Path) -> None:
    check_output_file(tmp_path / "new" / "deeper" / "r.json")
    check_output_dir(tmp_path / "made" / "later")
    assert list(tmp_path.iterdir()) == []  # nothing created, no probe left
    with pytest.raises(ConfigError, match="is a folder"):
        check_output_file(tmp_path)
    (tmp_path / "f").write_text("")
    with pytest.raises(ConfigError, match="not a folder"):
        check_output_file(tmp_path / "f" / "r.json")
    with pytest.raises(ConfigError, match="is a file"):
        check_output_dir(tmp_path / "f")
    with pytest.raises(ConfigError, match="out_dir"):
        check_output_dir(tmp_path / "f" / "sub", what="out_dir")
    assert [p.name for p in tmp_path.iterdir()] == ["f"]
