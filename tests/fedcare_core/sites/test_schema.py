"""The federation schema: built from the dataset's definition, read back only if honourable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fedcare_core.config import ExperimentConfig
from fedcare_core.data.diabetes130 import DIABETES130_ADMISSION_PARTITION, DIABETES130_PARTITION
from fedcare_core.errors import ConfigError
from fedcare_core.sites.schema import read_schema, schema_for


def _written(tmp_path: Path, config: ExperimentConfig | None = None) -> Path:
    return schema_for(config or ExperimentConfig()).write(tmp_path / "federation.json")


def test_a_written_schema_reads_back_with_the_same_digest(tmp_path):
    schema = schema_for(ExperimentConfig())
    back = read_schema(_written(tmp_path))
    assert back == schema and back.digest() == schema.digest()
    assert schema.objective_names == ("early_discharge", "readmission", "los")
    assert schema.partition == DIABETES130_PARTITION
    # 20 common features: 7 numeric (value + missing indicator) and 13 categorical
    assert schema.common_width() == 93


def test_the_digest_follows_every_setting(tmp_path):
    base = schema_for(ExperimentConfig())
    other = schema_for(ExperimentConfig().with_overrides(stage1={"local_steps": 7}))
    rho = schema_for(ExperimentConfig().with_overrides(data={"rho": 0.5}))
    assert len({base.digest(), other.digest(), rho.digest()}) == 3
    assert rho.partition != base.partition
    assert rho.partition.disparity_ratio() == pytest.approx(0.5, abs=0.05)


def test_an_admission_schema_carries_its_feature_set_and_refuses_another_partition(tmp_path):
    config = ExperimentConfig().with_overrides(data={"features": "admission"})
    schema = schema_for(config)
    assert schema.partition == DIABETES130_ADMISSION_PARTITION
    assert schema.digest() != schema_for(ExperimentConfig()).digest()
    path = schema.write(tmp_path / "federation.json")
    assert read_schema(path) == schema
    raw = json.loads(path.read_text())
    raw["features"]["private"]["los"].append("num_medications")  # a stay total, for LOS
    path.write_text(json.dumps(raw))
    with pytest.raises(ConfigError, match="differs from feature set 'admission'"):
        read_schema(path)


def test_mimic3_has_a_schema_too():
    schema = schema_for(ExperimentConfig().with_overrides(data={"dataset": "mimic3"}))
    assert schema.objective_names == ("mortality", "readmission", "los")
    assert schema.common_width() > 0


def test_only_fedcare_runs_across_sites():
    with pytest.raises(ConfigError, match="runs fedcare"):
        schema_for(ExperimentConfig(algorithm="fedavg"))


def _retype(raw: dict, column: str) -> None:
    raw["features"]["numeric"].remove(column)
    raw["features"]["categorical"].append(column)


def _tampered(tmp_path: Path, change) -> Path:
    path = _written(tmp_path)
    raw = json.loads(path.read_text())
    change(raw)
    path.write_text(json.dumps(raw))
    return path


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda r: r.update(format="fedcare-federation/9"), "'format' must be"),
        (lambda r: r["objectives"][1].update(label="any readmission"), "differ from"),
        (lambda r: r["objectives"][0].update(kind="regression"), "differ from"),
        (lambda r: r["objectives"].append(dict(r["objectives"][0])), "distinct"),
        (lambda r: r["features"]["vocabularies"]["race"].append("Martian"), "documented"),
        (lambda r: r["features"]["common"].append("shoe_size"), "not a feature"),
        (
            lambda r: (
                r["features"]["numeric"].remove("age"),
                r["features"]["categorical"].append("age"),
            ),
            "'age' is numeric",
        ),
        (lambda r: r["features"]["vocabularies"].pop("race"), "without a vocabulary"),
        (lambda r: r["config"]["stage1"].update(rounds=0), "stage1.rounds"),
        (lambda r: r["config"].update(algorithm="pafnet"), "a federation runs fedcare"),
        (lambda r: r.update(dataset="mimic3"), "config.data.dataset"),
        (lambda r: r["features"]["private"].update(mortality=["race"]), "unknown objective"),
        (lambda r: r.pop("features"), "field 'features' must be a JSON object"),
        (lambda r: r["features"].update(common="age"), "'features.common' must be a list"),
    ],
)
def test_a_schema_that_cannot_be_honoured_is_refused_with_the_reason(tmp_path, change, reason):
    path = _tampered(tmp_path, change)
    with pytest.raises(ConfigError, match=reason) as caught:
        read_schema(path)
    assert str(path) in str(caught.value)


def test_a_missing_or_unreadable_schema_is_named(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        read_schema(tmp_path / "absent.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match="not a readable JSON file"):
        read_schema(bad)


def test_objectives_are_checked_and_put_in_head_order():
    schema = schema_for(ExperimentConfig())
    assert schema.check_objectives(["los", "readmission"]) == ("readmission", "los")
    for bad in ([], ["mortality"], ["los", "los"]):
        with pytest.raises(ConfigError, match="--objectives"):
            schema.check_objectives(bad)
