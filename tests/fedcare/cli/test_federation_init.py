"""``fedcare federation init``: the schema file, its options, and what a tampered one is told."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fedcare.cli.main import main
from fedcare_core.sites.schema import read_schema


def _init(out: Path, *extra: str, dataset: str = "diabetes130") -> int:
    return main(["federation", "init", "--dataset", dataset, "--out", str(out), *extra])


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    """The one error line (and check it is one line, without a traceback)."""
    err = capsys.readouterr().err
    assert err.startswith("fedcare: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    return err


def test_init_writes_a_schema_that_reads_back_with_the_printed_digest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "coordinator" / "federation.json"
    assert _init(out) == 0
    printed = capsys.readouterr().out
    schema = read_schema(out)
    assert printed.splitlines()[0] == f"federation schema {schema.digest()}"
    assert "objectives: early_discharge, readmission, los" in printed
    common = len(schema.partition.common)
    assert f"common features: {common} (encoded width {schema.common_width()})" in printed
    for name in schema.objective_names:
        pool = len(schema.partition.private[name])
        assert f"private pool of {name}: {pool} features" in printed
    assert schema.config.algorithm == "fedcare" and schema.dataset == "diabetes130"
    assert [p.name for p in out.parent.iterdir()] == ["federation.json"]  # no temporary left


def test_mimic3_has_its_own_objectives(tmp_path: Path) -> None:
    assert _init(tmp_path / "f.json", dataset="mimic3") == 0
    schema = read_schema(tmp_path / "f.json")
    assert schema.dataset == "mimic3" and schema.config.data.dataset == "mimic3"
    assert schema.objective_names == ("mortality", "readmission", "los")


def test_options_land_in_the_schemas_config(tmp_path: Path) -> None:
    config_file = tmp_path / "c.json"
    config_file.write_text(
        json.dumps({"stage1": {"local_steps": 9, "rounds": 50}, "stage2": {"lr": 0.02}})
    )
    flags = [
        "--config", str(config_file), "--seed", "3", "--rho", "0.4", "--readmission", "any",
        "--unseen-categories", "other", "--rounds", "7", "--local-lr", "0.01",
        "--global-lr", "0.1", "--batch-size", "16", "--solver", "slsqp", "--normalise", "l2",
        "--qp-scope", "backbone", "--server-optimizer", "adam", "--stage2-epochs", "3",
    ]  # fmt: skip
    assert _init(tmp_path / "f.json", *flags) == 0
    config = read_schema(tmp_path / "f.json").config
    assert (config.seed, config.data.rho, config.data.readmission) == (3, 0.4, "any")
    assert config.data.unseen_categories == "other"
    stage1 = config.stage1
    assert (stage1.rounds, stage1.local_steps, stage1.local_lr, stage1.global_lr) == (
        7,  # the flag wins over the file
        9,  # the file's, no flag
        0.01,
        0.1,
    )
    assert (stage1.batch_size, stage1.solver, stage1.normalise) == (16, "slsqp", "l2")
    assert (stage1.qp_scope, stage1.server_optimizer) == ("backbone", "adam")
    assert (config.stage2.epochs, config.stage2.lr, config.stage2.solver) == (3, 0.02, "slsqp")


def test_rho_and_its_seed_change_the_partition(tmp_path: Path) -> None:
    def partition(name: str, *flags: str) -> Any:
        assert _init(tmp_path / name, *flags) == 0
        return read_schema(tmp_path / name)

    default = partition("default.json")
    low = partition("low.json", "--rho", "0.2")
    high = partition("high.json", "--rho", "0.8")
    other_draw = partition("other.json", "--rho", "0.8", "--seed", "5")
    assert len(low.partition.common) > len(high.partition.common)
    assert default.partition != low.partition != high.partition != other_draw.partition
    assert len({s.digest() for s in (default, low, high, other_draw)}) == 4
    assert high.partition.disparity_ratio() == pytest.approx(0.8, abs=0.1)
    assert set(high.partition.all_features) == set(default.partition.all_features)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--rounds", "0"], "stage1.rounds must lie in [1, "),
        (["--rho", "1.5"], "data.rho"),
        (["--algorithm", "fedavg"], "a federation of sites runs fedcare or fedxgb, not 'fedavg'"),
        (["--config", "missing.json"], "cannot read config missing.json"),
        (["--scaling", "federated"], "data.scaling (--scaling) 'federated' pools"),
        (
            ["--preset", "recommended-admission"],
            "--preset recommended-admission sets data.scaling (--scaling) 'federated', which",
        ),
    ],
)
def test_a_bad_option_is_refused_and_nothing_written(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    flags: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert _init(tmp_path / "out" / "f.json", *flags) == 2
    assert message in _error(capsys)
    assert list(tmp_path.iterdir()) == []


def test_a_config_file_of_another_algorithm_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config_file = tmp_path / "c.json"
    config_file.write_text(json.dumps({"algorithm": "fedprox"}))
    assert _init(tmp_path / "f.json", "--config", str(config_file)) == 2
    assert "runs fedcare or fedxgb, not 'fedprox'" in _error(capsys)
    assert not (tmp_path / "f.json").exists()


def test_an_unwritable_out_is_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a-file").write_text("x")
    assert _init(tmp_path / "a-file" / "f.json", "--rounds", "0") == 2
    assert "a-file is a file, not a folder" in _error(capsys)  # refused before the bad --rounds
    assert _init(tmp_path) == 2
    assert "is a folder; give a file path" in _error(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def _tamper(path: Path, edit: Any) -> None:
    raw = json.loads(path.read_text())
    edit(raw)
    path.write_text(json.dumps(raw))


def _set_label(raw: dict[str, Any]) -> None:
    next(o for o in raw["objectives"] if o["name"] == "readmission")["label"] = "any readmission"


def _set_vocabulary(raw: dict[str, Any]) -> None:
    vocabularies = raw["features"]["vocabularies"]
    column = sorted(vocabularies)[0]
    vocabularies[column] = [*vocabularies[column][:-1], "made-up"]


def _retype(raw: dict[str, Any]) -> None:
    features = raw["features"]
    column = next(c for c in features["common"] if c in features["numeric"])
    features["numeric"].remove(column)
    features["categorical"].append(column)


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (_set_label, "objective 'readmission': kind 'binary' / label 'any readmission' differ"),
        (_set_vocabulary, "differs from diabetes130's documented values"),
        (_retype, "is numeric in diabetes130, the schema declares it categorical"),
        (lambda raw: raw.update(format="fedcare-federation/0"), "field 'format' must be"),
        (lambda raw: raw["config"]["stage1"].update(rounds=-1), "stage1.rounds"),
    ],
)
def test_site_prepare_refuses_a_tampered_schema_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: Any, reason: str
) -> None:
    schema = tmp_path / "federation.json"
    assert _init(schema) == 0
    capsys.readouterr()
    _tamper(schema, edit)
    site = tmp_path / "site-a"
    argv = ["site", "prepare", "--schema", str(schema), "--data", str(tmp_path / "no-such.csv")]
    assert main([*argv, "--objectives", "readmission", "--out", str(site)]) == 2
    err = _error(capsys)
    assert err.startswith(f"fedcare: error: federation schema {schema}: ") and reason in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["federation.json"]


@pytest.mark.parametrize(
    "flag", ["--clients", "--split", "--objectives-per-client", "--max-patients"]
)
def test_what_the_sites_decide_is_not_an_init_option(tmp_path: Path, flag: str) -> None:
    with pytest.raises(SystemExit) as exit_:
        _init(tmp_path / "f.json", flag, "3")
    assert exit_.value.code == 2 and not (tmp_path / "f.json").exists()
