"""Stage 1 cached across flow runs: exact round trip, what the key covers, owner-only records."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import stat
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from prefect import flow

from fedcare_core.algorithms.base import Rounds, RunInputs
from fedcare_core.config import DataConfig, ExperimentConfig, Stage1Config, Stage2Config
from fedcare_core.errors import FedcareError
from fedcare_core.run.pipeline import prepare_federation, run_algorithm
from fedcare_core.run.results import DataProvenance
from fedcare_core.stage1.loop import run_stage1
from tasks.stage1_cache import Stage1Serializer, cache_folder, stage1_cache_key
from tasks.training import PrefectExecutor
from tests.fedcare_core.synthetic import PARTITION, make_cohort


def _config(algorithm: str = "fedcare", seed: int = 1, rounds: int = 3) -> ExperimentConfig:
    return ExperimentConfig(
        algorithm=algorithm,
        seed=seed,
        data=DataConfig(clients=3),
        stage1=Stage1Config(rounds=rounds, batch_size=32),
        stage2=Stage2Config(epochs=2, batch_size=32),
    )


@pytest.fixture(scope="module")
def cohort() -> Any:
    return make_cohort(240)


def _inputs(cohort: Any, config: ExperimentConfig) -> RunInputs:
    federation = prepare_federation(cohort, PARTITION, config, None)
    return RunInputs(federation, federation, None, config)  # type: ignore[arg-type]


def test_serializer_round_trip_is_exact_and_stores_no_client_rows(
    cohort: Any, tmp_path: Path
) -> None:
    config = _config()
    fed = _inputs(cohort, config).federation
    stage1 = run_stage1(fed, config.model, config.stage1, config.seed)
    stage1 = dataclasses.replace(stage1, notes=["a note"])
    folder = tmp_path / "results"
    serializer = Stage1Serializer(folder=str(folder))
    blob = serializer.dumps(Rounds(stage1))
    back = Stage1Serializer(folder=str(folder)).loads(blob).stage1
    np.testing.assert_array_equal(back.params, stage1.params)
    np.testing.assert_array_equal(back.buffers, stage1.buffers)
    assert back.params.dtype == stage1.params.dtype
    assert (back.rounds, back.converged, back.objectives) == (
        stage1.rounds,
        stage1.converged,
        stage1.objectives,
    )
    assert back.layout == stage1.layout and back.notes == ["a note"]
    # Prefect's record gets a reference only; the archive is owner-only, atomic, no pickle.
    ref = json.loads(blob)
    assert set(ref) == {"file", "sha256"}
    (archive_path,) = folder.iterdir()
    assert archive_path.name == ref["file"]
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(archive_path.stat().st_mode) == 0o600
    with np.load(archive_path, allow_pickle=False) as archive:
        assert sorted(archive.files) == ["buffers", "meta", "params"]
        meta = json.loads(archive["meta"].tobytes().decode())
    assert set(meta) == {"format", "key", "converged", "objectives", "layout", "notes"} | {
        "rounds",
        "digest",
    }
    assert stage1.params.size == stage1.layout.total  # w* only: no client rows


def test_serializer_refuses_other_rounds_and_altered_archives(tmp_path: Path) -> None:
    serializer = Stage1Serializer(folder=str(tmp_path))
    with pytest.raises(TypeError):
        serializer.dumps({"not": "rounds"})  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        serializer.dumps(Rounds(None, models=(object(),)))  # type: ignore[arg-type]
    bad = tmp_path / "x.npz"
    bad.write_bytes(b"not an archive")
    with pytest.raises(FedcareError, match="digest"):
        serializer.loads(json.dumps({"file": "x.npz", "sha256": "0" * 64}).encode())
    digest = hashlib.sha256(b"not an archive").hexdigest()
    with pytest.raises(FedcareError, match=r"unreadable|corrupt"):
        serializer.loads(json.dumps({"file": "x.npz", "sha256": digest}).encode())


def test_key_covers_settings_seed_data_and_backend(cohort: Any) -> None:
    base = _inputs(cohort, _config())
    key = stage1_cache_key(base, "local")
    assert key is not None and len(key) == 64
    assert stage1_cache_key(_inputs(cohort, _config()), "local") == key  # stable
    # FedCARE-B runs the same Stage 1, so it shares the record.
    assert stage1_cache_key(_inputs(cohort, _config("fedcare-b")), "local") == key
    assert stage1_cache_key(_inputs(cohort, _config(seed=2)), "local") != key
    assert stage1_cache_key(_inputs(cohort, _config(rounds=4)), "local") != key
    assert stage1_cache_key(base, "flower-sim") != key
    changed = _inputs(cohort, _config())
    changed.federation.clients[0].train.x_common[0, 0] += 1.0
    assert stage1_cache_key(changed, "local") != key
    # Baselines and bounds are not cached.
    assert stage1_cache_key(_inputs(cohort, _config("fedavg")), "local") is None


def test_default_folder_is_under_prefect_home(tmp_path: Path) -> None:
    from prefect.settings import PREFECT_HOME, temporary_settings

    with temporary_settings({PREFECT_HOME: str(tmp_path / "home")}):
        assert cache_folder(None) == (tmp_path / "home" / "fedcare-stage1-cache").resolve()
    assert cache_folder(str(tmp_path / "x")) == (tmp_path / "x").resolve()


def _flow_run(cohort: Any, config: ExperimentConfig, cache: Path | None) -> tuple[dict, list]:
    """Run ``config`` as the flow does; its document and the phases that reported progress."""
    federation = prepare_federation(cohort, PARTITION, config, None)
    seen: list[tuple[str, int]] = []

    @flow
    def run() -> dict:
        return run_algorithm(
            federation,
            config,
            provenance=DataProvenance.of(cohort),
            executor=PrefectExecutor(stage1_cache=cache),
            progress=lambda phase, done, total: seen.append((phase, done)),
        ).to_dict()

    doc = run()
    doc.pop("timing")
    return doc, seen


def test_a_second_flow_run_loads_stage1_instead_of_training(cohort: Any, tmp_path: Path) -> None:
    config = _config()
    first, seen_first = _flow_run(cohort, config, tmp_path / "cache")
    assert [d for p, d in seen_first if p == "stage1"] == [1, 2, 3]
    cache = tmp_path / "cache"
    assert sorted(p.name for p in cache.iterdir()) == ["records", "results"]
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o700 for p in [cache, *cache.iterdir()])
    (record,) = (cache / "records").iterdir()
    (archive,) = (cache / "results").iterdir()
    # Prefect's record is JSON naming the .npz; no pickle at rest.
    meta = json.loads(record.read_text())
    assert meta["metadata"]["serializer"] == {
        "type": "fedcare-stage1-npz",
        "folder": str((cache / "results").resolve()),
    }
    assert json.loads(meta["result"]) == {"file": archive.name, "sha256": archive.stem}
    assert stat.S_IMODE(archive.stat().st_mode) == 0o600

    second, seen_second = _flow_run(cohort, config, tmp_path / "cache")
    assert [d for p, d in seen_second if p == "stage1"] == []  # Stage 1 did not train
    assert second == first  # λ* of every round, every metric: identical

    # Without the cache (or for another seed) Stage 1 trains again.
    _, seen_off = _flow_run(cohort, config, None)
    assert [d for p, d in seen_off if p == "stage1"] == [1, 2, 3]
    _, seen_seed = _flow_run(cohort, _config(seed=2), tmp_path / "cache")
    assert [d for p, d in seen_seed if p == "stage1"] == [1, 2, 3]


def test_a_baseline_persists_nothing(cohort: Any, tmp_path: Path) -> None:
    _, seen = _flow_run(cohort, _config("fedavg"), tmp_path / "cache")
    assert [p for p in (tmp_path / "cache").rglob("*") if p.is_file()] == []
    _, again = _flow_run(cohort, _config("fedavg"), tmp_path / "cache")
    assert [p for p, _ in again] == [p for p, _ in seen]
