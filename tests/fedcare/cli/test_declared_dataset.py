"""A dataset the package has never seen, defined by a file only, through every entry.

The synthetic hospital extract of ``examples/hospital`` (seeded, never a patient's) runs
through ``fedcare data check``, ``fedcare run``, ``fedcare predict`` from raw rows, ``fedcare
experiment``, and a three-site federation prepared with ``fedcare federation init`` and
``fedcare site prepare`` and run in one process (``fedcare run --sites``), with no Python
added for it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from examples.hospital.make_extract import make_extract, site_exports
from fedcare.cli.main import main
from tests.fedcare.sites.hospital_sites import OWN_COLUMNS, write_hospital_sites

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "hospital" / "definition.yaml"
SMALL = ["--clients", "3", "--rounds", "3", "--stage2-epochs", "2", "--quiet"]


@pytest.fixture(scope="module")
def hospital(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The definition beside a 2,400-encounter extract, and three hospitals' files."""
    root = tmp_path_factory.mktemp("riverside")
    shutil.copy(EXAMPLE, root / "definition.yaml")
    frame = make_extract(2400, seed=3)
    frame.to_csv(root / "encounters.csv.gz", index=False)
    patients = frame["MRN"].unique()
    site_of = {p: i % 3 for i, p in enumerate(patients)}
    for k in range(3):
        folder = root / f"site{k + 1}"
        folder.mkdir()
        frame[frame["MRN"].map(site_of) == k].to_csv(folder / "encounters.csv", index=False)
    return root


def test_data_check_prints_the_profile_the_definition_implies(
    hospital: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = hospital / "profile.json"
    argv = ["data", "check", "--dataset", str(hospital / "definition.yaml"), "--json", str(profile)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("dataset riverside:")
    doc = json.loads(profile.read_text())
    kept = make_extract(2400, seed=3).query("DISCH_DISPO != 'AMA'")
    assert doc["rows"] == len(kept)
    assert doc["patients"] == kept["MRN"].nunique()
    roles = {f["name"]: f["role"] for f in doc["features"]}
    assert roles["AGE_YRS"] == "common" and roles["PAYOR_CLASS"] == "private: readmission, los"
    smoking = next(f for f in doc["features"] if f["name"] == "SMOKING_STATUS")
    assert "counts" not in smoking and smoking["distinct"] > 1  # open vocabulary: no values
    assert "RG7" not in out  # no identifier


def test_data_check_profiles_the_table_mimic3s_extractor_builds(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The MIMIC-III demo's stays by their definition; the vitals (no CHARTEVENTS) are empty."""
    demo = data_dir / "mimic3-demo"
    if not demo.is_dir():
        pytest.skip("the MIMIC-III demo is not in the data folder")
    profile = tmp_path / "profile.json"
    argv = ["data", "check", "--dataset", "mimic3", "--data-dir", str(demo), "--json", str(profile)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    doc = json.loads(profile.read_text())
    assert (doc["rows"], doc["patients"]) == (135, 99)
    features = {f["name"]: f for f in doc["features"]}
    assert len(features) == 46 and features["hr_mean"]["missing_share"] == 1.0
    assert "no value in any row" in out
    assert features["gender"]["counts"] == {"F": 62, "M": 73}


def test_run_then_predict_raw_rows_with_the_packaged_model(
    hospital: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    out = tmp_path / "run.json"
    argv = ["run", "--dataset", str(hospital / "definition.yaml"), "--out", str(out)]
    assert main([*argv, *SMALL, "--tracking-uri", uri]) == 0
    doc = json.loads(out.read_text())
    assert doc["dataset"] == "riverside"
    assert set(doc["objectives"]) == {"mortality", "readmission", "los"}
    client = next(c["client"] for c in doc["clients"] if c["objectives"] == ["readmission"])

    rows = pd.read_csv(hospital / "site1" / "encounters.csv", dtype=str, keep_default_na=False)
    rows.head(40).to_csv(tmp_path / "new.csv", index=False)
    model = f"models:/fedcare-riverside-fedcare-readmission-client{client}@champion"
    scores = tmp_path / "scores.csv"
    argv = ["predict", "--model", model, "--data", str(tmp_path / "new.csv")]
    assert main([*argv, "--out", str(scores), "--tracking-uri", uri]) == 0
    scored = pd.read_csv(scores)
    assert list(scored.columns) == ["MRN", "CSN", "readmission_probability"]
    assert scored["readmission_probability"].between(0, 1).all()

    rows.loc[4, "SBP_ADMIT"] = "999"  # outside the declared plausible range
    rows.head(40).to_csv(tmp_path / "bad.csv", index=False)
    argv = ["predict", "--model", model, "--data", str(tmp_path / "bad.csv")]
    assert main([*argv, "--out", str(tmp_path / "bad_scores.csv"), "--tracking-uri", uri]) == 2
    assert not (tmp_path / "bad_scores.csv").exists()


def test_experiment_grid_on_the_definition(hospital: Path, tmp_path: Path) -> None:
    argv = ["experiment", "comparison", "--dataset", str(hospital / "definition.yaml")]
    argv += ["--seeds", "1", "--clients", "3", "--rounds", "2", "--stage2-epochs", "2"]
    argv += ["--algorithms", "fedcare,local", "--workers", "1", "--out", str(tmp_path), "--quiet"]
    assert main(argv) == 0
    runs = pd.read_csv(tmp_path / "comparison" / "comparison_runs.csv")
    assert set(runs["algorithm"]) == {"fedcare", "local"}
    assert runs[["mortality", "readmission", "los"]].notna().all().all()


def test_three_sites_prepared_from_the_schema_run_in_one_process(
    hospital: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copy(hospital / "definition.yaml", tmp_path / "definition.yaml")
    argv = ["federation", "init", "--dataset", "definition.yaml", "--out", "federation.json"]
    assert main([*argv, "--rounds", "3"]) == 0
    schema = json.loads((tmp_path / "federation.json").read_text())
    assert schema["dataset"] == "riverside"
    assert schema["config"]["data"]["dataset"] == "riverside"  # the text travels, not a path
    assert str(tmp_path) not in json.dumps(schema)
    # A site reads the schema on another machine: the coordinator's file is not there.
    (tmp_path / "definition.yaml").unlink()
    objectives = ["mortality", "readmission", "los"]
    sites = []
    for k, objective in enumerate(objectives, start=1):
        data = str(hospital / f"site{k}" / "encounters.csv")
        argv = ["site", "prepare", "--schema", "federation.json", "--data", data]
        assert main([*argv, "--objectives", objective, "--out", f"site{k}"]) == 0
        sites.append({"data": data, "objectives": [objective], "name": f"site{k}"})
    (tmp_path / "sites.json").write_text(json.dumps(sites))
    argv = ["run", "--sites", "sites.json", "--schema", "federation.json", "--out", "run.json"]
    assert main([*argv, "--quiet"]) == 0
    doc = json.loads((tmp_path / "run.json").read_text())
    assert doc["dataset"] == "riverside"
    assert set(doc["objectives"]) == set(objectives)


def test_sites_with_their_own_columns_compare_fedcare_with_the_baselines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sites whose feature spaces truly differ (own columns, own names), every method on them."""
    monkeypatch.chdir(tmp_path)
    write_hospital_sites(tmp_path)
    declared = {f for names in OWN_COLUMNS.values() for f in names}
    for algorithm in ("fedcare", "fedavg", "local"):
        out = f"{algorithm}.json"
        argv = ["run", "--sites", "sites.json", "--schema", "fed.json", "--rounds", "2"]
        assert main([*argv, "--algorithm", algorithm, "--out", out, "--quiet"]) == 0
        doc = json.loads((tmp_path / out).read_text())
        assert doc["algorithm"] == algorithm
        for client, name in zip(doc["clients"], sorted(OWN_COLUMNS), strict=True):
            extra = [f for f in client["private_features"] if f in declared]
            assert extra == OWN_COLUMNS[name], (algorithm, name)


def test_data_check_takes_a_sites_own_declarations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A hospital checks its export with its private columns and column map before joining."""
    example = EXAMPLE.parent
    for name in ("definition.yaml", "site3-private.yaml", "site3-map.yaml"):
        shutil.copy(example / name, tmp_path / name)
    export = site_exports(make_extract(1200, seed=9), 3, 9)["site3"]
    export.to_csv(tmp_path / "site3.csv", index=False)
    base = ["data", "check", "--dataset", str(tmp_path / "definition.yaml")]
    base += ["--data-dir", str(tmp_path / "site3.csv")]
    assert main(base) == 2  # its own names: refused, the renames suggested
    err = capsys.readouterr().err
    assert "missing column(s): 'MRN', 'AGE_YRS'" in err and "'PAT_ID', 'AGE'" in err
    own = ["--private", str(tmp_path / "site3-private.yaml")]
    own += ["--map", str(tmp_path / "site3-map.yaml"), "--json", str(tmp_path / "p.json")]
    assert main([*base, *own]) == 0
    doc = json.loads((tmp_path / "p.json").read_text())
    roles = {f["name"]: f["role"] for f in doc["features"]}
    assert roles["ADMIT_WARD"].startswith("private:") and roles["AGE_YRS"] == "common"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "definition.yaml", "p.json", "site3-map.yaml", "site3-private.yaml", "site3.csv",
    ]  # fmt: skip


def test_a_users_definition_of_an_extractors_table_runs(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A definition of its own over the MIMIC-III extractor's table, under a name of its own."""
    demo = data_dir / "mimic3-demo"
    if not demo.is_dir():
        pytest.skip("the MIMIC-III demo is not in the data folder")
    from fedcare_core.data.definitions import builtin_definition

    text = builtin_definition("mimic3").read_text(encoding="utf-8")
    text = text.replace("name: mimic3", "name: icu-stays", 1)
    (tmp_path / "icu.yaml").write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    argv = ["run", "--dataset", "icu.yaml", "--data-dir", str(demo), *SMALL, "--out", "r.json"]
    assert main(argv) == 0
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["dataset"] == "icu-stays"
    assert len(doc["clients"]) == 3
