"""``fedcare site prepare`` and ``fedcare site personalise``: a hospital's own steps.

Sites are small synthetic Diabetes 130 files (the tiny fixture's rows under new, distinctive
encounter and patient numbers, so a leak is easy to spot) and, once, the first 20,000 rows of
the real file. Personalisation is checked against ``fedcare run --sites`` over the same sites:
the broadcast ``w*`` is simulated by an in-process Stage 1 stored in each site folder.
"""

from __future__ import annotations

import hashlib
import json
import re
import stat
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fedcare.cli.main import main
from fedcare.sites.site_folder import SiteFolder
from fedcare.sites.site_input import load_site
from fedcare_core.data.clients import SPLITS, ClientData
from fedcare_core.data.diabetes130 import DIABETES130_COLUMNS
from fedcare_core.errors import ConfigError
from fedcare_core.sites.schema import read_schema
from tests.fedcare_core.data.diabetes130.helpers import fixture_lines, set_field, write_csv

#: Synthetic encounter and patient numbers: ``<prefix><4 digits>``, found by :data:`IDS`.
ENCOUNTER_PREFIX, PATIENT_PREFIX = "736410", "918273"
IDS = re.compile(
    rb"(?<!\d)(?:%s|%s)\d{4}(?!\d)" % (ENCOUNTER_PREFIX.encode(), PATIENT_PREFIX.encode())
)
#: The sites of the personalisation tests: name → objectives.
SITES = {
    "hospital-a": ["readmission"],
    "hospital-b": ["readmission", "los"],
    "hospital-c": ["early_discharge", "los"],
}
SITE_ENTRIES = ["data", "federation.json", "keys", "site-card.json", "site.json"]


def synthetic_site(path: Path, rows: int = 240, offset: int = 0) -> Path:
    """A Diabetes 130 file of ``rows`` encounters, two per patient, from the tiny fixture's rows."""
    lines = fixture_lines()
    encounter = DIABETES130_COLUMNS.index("encounter_id")
    patient = DIABETES130_COLUMNS.index("patient_nbr")
    out = [lines[0]]
    for i in range(rows):
        fields = lines[1 + (7 * i + offset) % (len(lines) - 1)].split(",")
        fields[encounter] = f"{ENCOUNTER_PREFIX}{offset * 1000 + i:04d}"
        fields[patient] = f"{PATIENT_PREFIX}{offset * 1000 + i // 2:04d}"
        out.append(",".join(fields))
    return write_csv(path, out)


def init_schema(out: Path) -> Path:
    """A schema for quick runs: 2 rounds, 1 Stage 2 epoch."""
    argv = ["federation", "init", "--dataset", "diabetes130", "--out", str(out)]
    assert main([*argv, "--rounds", "2", "--stage2-epochs", "1"]) == 0
    return out


def prepare(schema: Path, data: Path, out: Path, objectives: str, *extra: str) -> int:
    argv = ["site", "prepare", "--schema", str(schema), "--data", str(data)]
    return main([*argv, "--objectives", objectives, "--out", str(out), *extra])


def personalise(site: Path, out: Path, *extra: str) -> int:
    return main(["site", "personalise", "--site", str(site), "--out", str(out), *extra])


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def one_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.startswith("fedcare: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    return err


def leaked_ids(paths: Iterable[Path]) -> list[str]:
    """Synthetic encounter or patient numbers found in any of these files (or folders)."""
    found = []
    for root in paths:
        for path in [root] if root.is_file() else sorted(root.rglob("*")):
            if path.is_file():
                found += [f"{path}: {m.decode()}" for m in IDS.findall(path.read_bytes())]
    return found


def assert_same_client(a: ClientData, b: ClientData) -> None:
    assert (a.objectives, a.common_features, a.private_features) == (
        b.objectives,
        b.common_features,
        b.private_features,
    )
    for split in SPLITS:
        for field in ("x_common", "x_private", "y"):
            np.testing.assert_array_equal(
                getattr(a.split(split), field), getattr(b.split(split), field)
            )
    for enc_a, enc_b in (
        (a.common_encoder, b.common_encoder),
        (a.private_encoder, b.private_encoder),
    ):
        assert enc_a.width == enc_b.width and enc_a.categorical == enc_b.categorical
        np.testing.assert_array_equal(enc_a.means, enc_b.means)


@pytest.fixture(scope="module")
def schema_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return init_schema(tmp_path_factory.mktemp("coordinator") / "federation.json")


def check_site_folder(root: Path, schema: Path, name: str, objectives: list[str]) -> None:
    """Layout, modes and the public card of a prepared site folder."""
    assert sorted(p.name for p in root.iterdir()) == SITE_ENTRIES
    assert {mode(p) for p in [root, root / "data", root / "keys"]} == {0o700}
    private = [*sorted((root / "data").iterdir()), root / "keys" / "node.key"]
    assert {mode(p) for p in [*private, root / "site.json", root / "federation.json"]} == {0o600}
    assert mode(root / "site-card.json") == mode(root / "keys" / "node.pub") == 0o644
    card = json.loads((root / "site-card.json").read_text())
    assert card == {
        "format": "fedcare-site-card/1",
        "name": name,
        "objectives": objectives,
        "schema_digest": read_schema(schema).digest(),
        "public_key": (root / "keys" / "node.pub").read_text().strip(),
    }
    assert card["public_key"].startswith("ecdsa-sha2-nistp256 ")  # OpenSSH, as Flower reads
    assert "PRIVATE" in (root / "keys" / "node.key").read_text()


def test_prepare_writes_an_owner_only_site_folder_and_a_public_card(
    tmp_path: Path, schema_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = synthetic_site(tmp_path / "export" / "hospital.csv")
    out = tmp_path / "sites" / "st-mary"
    assert prepare(schema_file, data, out, "los,readmission") == 0
    captured = capsys.readouterr()
    check_site_folder(out, schema_file, "st-mary", ["readmission", "los"])  # the schema's order
    info = json.loads((out / "site.json").read_text())
    assert info["name"] == "st-mary" and info["split_seed"] == 0
    assert info["source_sha256"] == hashlib.sha256(data.read_bytes()).hexdigest()
    rows = info["rows"]
    assert sum(rows.values()) == 240 and min(rows.values()) > 0
    assert captured.out.splitlines() == [
        "site st-mary: objectives readmission, los",
        "  site name: st-mary, the --out folder's name (on the card the coordinator registers; "
        "to choose another, prepare again with --name NAME)",
        f"  rows: train {rows['train']:,}, validation {rows['val']:,}, test {rows['test']:,}",
        f"  site folder: {out}",
        f"send {out / 'site-card.json'} to the coordinator (public: name, objectives, schema "
        f"digest, public key); keep {out / 'keys' / 'node.key'} secret: it never leaves the site",
    ]
    assert sorted(p.name for p in out.parent.iterdir()) == ["st-mary"]  # no temporary left
    schema = read_schema(schema_file)
    loaded = load_site(schema, data, ["readmission", "los"], name="st-mary", seed=0)
    assert_same_client(SiteFolder.open(out).client(), loaded.client)
    texts = [p for p in out.rglob("*") if p.suffix in {".json", ".pub", ".key"}]
    assert leaked_ids([*texts, out / "data"]) == [] and not IDS.search(
        (captured.out + captured.err).encode()
    )


def test_name_and_seed_options(tmp_path: Path, schema_file: Path) -> None:
    data = synthetic_site(tmp_path / "hospital.csv")
    a, b = tmp_path / "a", tmp_path / "b"
    assert prepare(schema_file, data, a, "readmission", "--name", "north", "--seed", "7") == 0
    assert prepare(schema_file, data, b, "readmission", "--name", "north", "--seed", "8") == 0
    info = SiteFolder.open(a).info()
    assert (info["name"], info["split_seed"]) == ("north", 7)
    ya, yb = SiteFolder.open(a).client().test.y, SiteFolder.open(b).client().test.y
    assert ya.shape != yb.shape or not np.array_equal(ya, yb, equal_nan=True)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--objectives", "mortality"], "--objectives: give one or more distinct objectives of "
         "this federation (early_discharge, readmission, los), got mortality"),
        (["--objectives", "los,los"], "got los, los"),
        (["--objectives", "readmission", "--name", "bad name"], "--name: site name 'bad name'"),
        (["--objectives", "readmission", "--seed", "-1"], "--seed must lie in [0, "),
        (["--objectives", "readmission", "--seed", str(2**40)],
         "--seed must lie in [0, 4,294,967,295], got 1,099,511,627,776"),
        (["--objectives", "readmission", "--name", ""], "--name: site name ''"),
        (["--objectives", "readmission", "--name", "../x"], "--name: site name '../x'"),
    ],
)  # fmt: skip
def test_bad_options_are_refused_before_the_file_is_read(
    tmp_path: Path,
    schema_file: Path,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    message: str,
) -> None:
    missing = tmp_path / "no-such.csv"  # never read: each refusal comes first
    argv = ["site", "prepare", "--schema", str(schema_file), "--data", str(missing)]
    assert main([*argv, "--out", str(tmp_path / "site"), *extra]) == 2
    assert message in one_error(capsys)
    assert list(tmp_path.iterdir()) == []


def test_the_default_name_comes_from_out_and_is_checked(
    tmp_path: Path, schema_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "st mary"
    assert prepare(schema_file, tmp_path / "no-such.csv", out, "readmission") == 2
    assert f"--out {out} (the default --name): site name 'st mary'" in one_error(capsys)


def test_an_existing_out_is_refused_and_left_untouched(
    tmp_path: Path, schema_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "site"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    assert prepare(schema_file, tmp_path / "no-such.csv", out, "readmission") == 2
    assert f"--out {out} exists and is not an empty folder" in one_error(capsys)
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    assert (out / "keep.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]


def _drop_column(lines: list[str], column: str) -> list[str]:
    j = DIABETES130_COLUMNS.index(column)
    return [",".join(f for i, f in enumerate(line.split(",")) if i != j) for line in lines]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda lines: set_field(lines, 7, "num_lab_procedures", "twelve"),
            "column 'num_lab_procedures'; row 7: non-numeric value(s) in a numeric column",
        ),
        (
            lambda lines: _drop_column(lines, "num_lab_procedures"),
            "column 'num_lab_procedures': missing column(s): 'num_lab_procedures'",
        ),
    ],
)
def test_a_file_failing_its_checks_stops_here_and_leaves_nothing(
    tmp_path: Path, schema_file: Path, capsys: pytest.CaptureFixture[str], edit: Any, message: str
) -> None:
    good = synthetic_site(tmp_path / "good.csv")
    data = write_csv(tmp_path / "export.csv", edit(good.read_text().splitlines()))
    good.unlink()
    out = tmp_path / "site"
    assert prepare(schema_file, data, out, "readmission") == 2
    err = one_error(capsys)
    assert err.startswith(f"fedcare: error: file {data}; ") and message in err
    assert not IDS.search(err.encode())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export.csv"]


def test_a_failure_while_writing_the_folder_leaves_nothing(
    tmp_path: Path,
    schema_file: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from fedcare.sites import site_folder

    def fail(client: ClientData, folder: Path) -> None:
        (folder / "half").mkdir(parents=True)  # something written, then the failure
        raise ConfigError("disk full")

    monkeypatch.setattr(site_folder, "save_data", fail)
    data = synthetic_site(tmp_path / "hospital.csv")
    assert prepare(schema_file, data, tmp_path / "site", "readmission") == 2
    assert one_error(capsys) == "fedcare: error: disk full\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hospital.csv"]


@pytest.mark.realdata
def test_a_real_site_file(data_dir: Path, tmp_path: Path, schema_file: Path) -> None:
    with zipfile.ZipFile(data_dir / "diabetes130" / "dataset_diabetes.zip") as zf:
        lines = zf.read("dataset_diabetes/diabetic_data.csv").split(b"\n")
    data = tmp_path / "export.csv"
    data.write_bytes(b"\n".join(lines[:20_001]) + b"\n")  # header + the first 20,000 encounters
    out = tmp_path / "site-real"
    assert prepare(schema_file, data, out, "readmission,los,early_discharge") == 0
    check_site_folder(out, schema_file, "site-real", ["early_discharge", "readmission", "los"])
    site = SiteFolder.open(out)
    schema = read_schema(schema_file)
    objectives = list(schema.objective_names)
    loaded = load_site(schema, data, objectives, name="site-real", seed=0)
    assert_same_client(site.client(), loaded.client)
    rows = site.info()["rows"]
    assert sum(rows.values()) == 20_000 and rows["train"] > 10_000
    text = b"".join(p.read_bytes() for p in out.rglob("*.json"))
    assert b"encounter_id" not in text and b"patient_nbr" not in text


# ---------------------------------------------------------------------------------------------
# A site's own columns and names (issue 52, stumble 8): what it is told, at the site only
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hospitals(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example hospitals' exports, declarations and schema (``fed.json``), 1,200 encounters."""
    from tests.fedcare.sites.hospital_sites import write_hospital_sites

    folder = tmp_path_factory.mktemp("hospitals")
    write_hospital_sites(folder, rows=1200)
    return folder


def test_prepare_names_the_private_columns_it_took_and_those_it_left_out(
    tmp_path: Path, hospitals: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schema, data = hospitals / "fed.json", hospitals / "site2.csv"
    own = ["--name", "south", "--private", str(hospitals / "site2-private.yaml")]
    assert prepare(schema, data, tmp_path / "a", "readmission,los", *own) == 0
    lines = capsys.readouterr().out.splitlines()
    assert (
        "  private columns taken (this site's own; named only here, never sent): "
        "readmission: LACTATE_MAX, CLIN_FRAILTY_SCALE; los: CLIN_FRAILTY_SCALE"
    ) in lines
    assert not any("site name:" in line or "left out" in line for line in lines)  # --name given
    assert "LACTATE_MAX" not in (tmp_path / "a" / "site-card.json").read_text()
    assert prepare(schema, data, tmp_path / "b", "readmission") == 0  # no --private: left out
    lines = capsys.readouterr().out.splitlines()
    assert (
        "  columns of the export left out (not in the definition; --private FILE.yaml declares "
        "a site's own columns): LACTATE_MAX, CLIN_FRAILTY_SCALE"
    ) in lines
    assert "  site name: b, the --out folder's name" in " ".join(lines)
    assert not any("private columns taken" in line for line in lines)


@pytest.mark.parametrize(
    ("mapping", "expected"),
    [
        (None, "if your export names them its own way, map them with --map FILE.yaml holding "
         "'version: 1' and 'rename: {YOUR_COLUMN: MRN, …}'"),
        ("version: 1\nrename: {AGE: AGE_YRS}\n", "does not map it: add under its 'rename:' "
         "'YOUR_COLUMN: MRN'"),
    ],
)  # fmt: skip
def test_an_unmapped_export_is_refused_pointing_at_the_column_map(
    tmp_path: Path,
    hospitals: Path,
    capsys: pytest.CaptureFixture[str],
    mapping: str | None,
    expected: str,
) -> None:
    extra = [] if mapping is None else ["--map", str(tmp_path / "map.yaml")]
    if mapping is not None:
        (tmp_path / "map.yaml").write_text(mapping)
    out = tmp_path / "east"
    assert prepare(hospitals / "fed.json", hospitals / "site3.csv", out, "los", *extra) == 2
    err = one_error(capsys)
    missing = "'MRN', 'AGE_YRS'" if mapping is None else "'MRN'"
    assert f"missing column(s): {missing};" in err and expected in err
    assert "A site's own columns and names" in err  # where the map's format is documented
    if mapping is not None:
        assert f"--map {tmp_path / 'map.yaml'} does not map it" in err
    assert not out.exists()


def test_a_built_in_export_with_its_own_names_is_told_to_keep_the_published_ones(
    tmp_path: Path, schema_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = synthetic_site(tmp_path / "good.csv").read_text().splitlines()
    lines[0] = lines[0].replace("race", "ethnicity")
    data = write_csv(tmp_path / "export.csv", lines)
    assert prepare(schema_file, data, tmp_path / "site", "readmission") == 2
    err = one_error(capsys)
    assert "missing column(s): 'race'; unexpected column(s): 'ethnicity'" in err
    assert "diabetes130 is built in: its export keeps the published column names" in err
    assert "federation init --dataset FILE.yaml" in err
    assert not (tmp_path / "site").exists()
