"""Every command that reads and writes files refuses an output that would replace an input.

Each case is refused before any work: one line naming the output's option and the input's,
exit 2, and every file left as it was (nothing created either).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fedcare.app.path_roles import (
    check_flow_paths,
    data_folder,
    dataset_inputs,
    sites_inputs,
    store_file,
)
from fedcare.cli.main import main
from fedcare_core.errors import ConfigError

#: A valid dataset definition (the worked example's).
_DEFINITION = Path(__file__).resolve().parents[3] / "examples" / "hospital" / "definition.yaml"
#: The inputs each case may name, written fresh into its working folder.
_FILES = {
    "c.json": "{}\n",
    "rows.csv": "a,b\n1,2\n",
    "data/diabetic_data.csv": "a,b\n1,2\n",
    "S/site.json": "{}\n",
    "ST/superlink.json": "{}\n",
    "fed.json": "{}\n",
    "sites.json": "[]\n",
}


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FEDCARE_DATA_DIR", raising=False)
    for name, text in _FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "s.db").write_bytes(b"")
    (tmp_path / "def.yaml").write_bytes(_DEFINITION.read_bytes())  # a valid definition
    return tmp_path


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (["run", "--config", "c.json", "--out", "c.json"], ("--out c.json", "--config c.json")),
        (["run", "--config", "c.json", "--out", "./c.json"], ("--out c.json", "--config")),
        (["run", "--run-dir", ".", "--config", "c.json"], ("--run-dir .", "holds --config")),
        (["run", "--tracking-uri", "sqlite:///s.db", "--out", "s.db"], ("--out", "--tracking-uri")),
        (["run", "--data-dir", "data", "--out", "data/diabetic_data.csv"],
         ("--out data/diabetic_data.csv", "of --data-dir data")),
        (["run", "--dataset", "def.yaml", "--out", "def.yaml"], ("--out", "--dataset def.yaml")),
        (["run", "--resume", "S", "--out", "S/site.json"], ("--out S/site.json", "--resume S")),
        (["run", "--sites", "sites.json", "--schema", "fed.json", "--out", "sites.json"],
         ("--out", "--sites")),
        (["data", "split-sites", "--dataset", "diabetes130", "--data", "rows.csv", "--sites",
          "2", "--seed", "0", "--out", "."], ("--out .", "holds --data rows.csv")),
        (["data", "split-sites", "--dataset", "diabetes130", "--data", "data", "--sites", "2",
          "--seed", "0", "--out", "data"], ("--out data", "is --data data")),
        (["site", "prepare", "--schema", "fed.json", "--data", "rows.csv", "--objectives", "los",
          "--out", "."], ("--out .", "holds --schema fed.json")),
        (["site", "prepare", "--schema", "fed.json", "--data", "data", "--objectives", "los",
          "--out", "data"], ("--out data", "is --data data")),
        (["site", "personalise", "--site", "S", "--out", "S/site.json"],
         ("--out S/site.json", "of --site S")),
        (["site", "personalise", "--site", "S", "--out", "s.db", "--tracking-uri",
          "sqlite:///s.db"], ("--out s.db", "--tracking-uri")),
        (["federation", "init", "--dataset", "def.yaml", "--out", "def.yaml"],
         ("--out def.yaml", "--dataset def.yaml")),
        (["federation", "init", "--dataset", "diabetes130", "--config", "c.json", "--out",
          "c.json"], ("--out c.json", "--config c.json")),
        (["federation", "run", "--state-dir", "ST", "--schema", "fed.json", "--min-sites", "2",
          "--rounds", "1", "--seed", "0", "--out", "fed.json"], ("--out fed.json", "--schema")),
        (["federation", "run", "--state-dir", "ST", "--schema", "fed.json", "--min-sites", "2",
          "--rounds", "1", "--seed", "0", "--out", "ST/superlink.json"],
         ("--out ST/superlink.json", "of --state-dir ST")),
        (["data", "check", "--dataset", "def.yaml", "--json", "def.yaml"],
         ("--json def.yaml", "--dataset def.yaml")),
        (["data", "check", "--dataset", "diabetes130", "--data-dir", "data", "--json",
          "data/diabetic_data.csv"], ("--json", "of --data-dir data")),
        (["experiment", "comparison", "--data-dir", "data", "--out", "data"],
         ("--out data", "is --data-dir data")),
    ],
)  # fmt: skip
def test_an_output_that_would_replace_an_input_is_refused_before_any_work(
    work: Path, capsys: pytest.CaptureFixture[str], argv: list[str], names: tuple[str, ...]
) -> None:
    before = _snapshot(work)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("fedcare: error: ") and len(err.splitlines()) == 1, err
    assert all(name in err for name in names), err
    assert _snapshot(work) == before


def test_a_hard_link_and_a_symbolic_link_are_the_same_file(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    os.link(work / "c.json", work / "hard.json")
    (work / "soft.json").symlink_to(work / "c.json")
    for out in ("hard.json", "soft.json"):
        argv = ["federation", "init", "--dataset", "diabetes130", "--config", "c.json"]
        assert main([*argv, "--out", out]) == 2
        err = capsys.readouterr().err
        assert f"--out {out} is --config c.json" in err


def test_the_paths_behind_options(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert store_file("sqlite:///s.db") == work / "s.db"
    assert store_file("http://127.0.0.1:5000") is None and store_file(None) is None
    assert dataset_inputs("diabetes130") == {}
    assert dataset_inputs("def.yaml") == {
        "--dataset": Path("def.yaml"),
        "--dataset's folder": Path(),
    }
    assert data_folder("data") == ("--data-dir", "data")
    assert data_folder(None) == ("$FEDCARE_DATA_DIR", None)
    monkeypatch.setenv("FEDCARE_DATA_DIR", "elsewhere")
    assert data_folder(None) == ("$FEDCARE_DATA_DIR", "elsewhere")
    assert sites_inputs("sites.json", "fed.json") == {}  # not readable here: the run refuses it


def test_a_sites_lists_files_are_inputs(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each site's data, private columns and column map (a real schema, two sites)."""
    from fedcare_core.config import ExperimentConfig
    from fedcare_core.sites.schema import schema_for

    config = ExperimentConfig.from_dict({"data": {"dataset": "diabetes130"}})
    (work / "fed.json").write_text(json.dumps(schema_for(config).to_dict()))
    sites = [
        {"name": "north", "data": "rows.csv", "objectives": ["los"]},
        {"name": "south", "data": "data/diabetic_data.csv", "objectives": ["readmission"],
         "map": "c.json"},
    ]  # fmt: skip
    (work / "sites.json").write_text(json.dumps(sites))
    found = sites_inputs("sites.json", "fed.json")
    assert Path(found["--sites sites.json (site north's data)"]).resolve() == work / "rows.csv"
    assert Path(found["--sites sites.json (site south's column map)"]).resolve() == work / "c.json"
    assert found["--sites sites.json (site north's private columns)"] is None
    argv = ["run", "--sites", "sites.json", "--schema", "fed.json", "--out", "c.json"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--out c.json is --sites sites.json (site south's column map) c.json" in err


def test_the_flows_output_folders_never_replace_what_it_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "diabetic_data.csv").write_text("x\n")
    config = tmp_path / "config.json"
    config.write_text("{}")
    reads = {"data_dir": str(data), "dataset": "diabetes130", "config_file": str(config)}
    check_flow_paths({"out_dir": str(tmp_path / "out"), "reports_dir": None}, reads)
    with pytest.raises(ConfigError, match=r"out_dir .* is data_dir"):
        check_flow_paths({"out_dir": str(data)}, reads)
    with pytest.raises(ConfigError, match=r"reports_dir .* is config_file"):
        check_flow_paths({"reports_dir": str(config)}, reads)
    monkeypatch.setenv("FEDCARE_DATA_DIR", str(data))  # the worker's folder, data_dir unset
    with pytest.raises(ConfigError, match=r"stage1_cache_dir .* is \$FEDCARE_DATA_DIR"):
        check_flow_paths({"stage1_cache_dir": str(data)}, {**reads, "data_dir": None})
