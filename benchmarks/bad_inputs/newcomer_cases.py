"""A newcomer's stumbles (issue 52, 4 and 8): no data given, and a site's own column names.

``nc-*`` cases. A run in a fresh shell (no ``--data-dir``, no ``FEDCARE_DATA_DIR``, an empty or
half-filled download cache, or a variable naming nothing) must say in one line every way to
give the data, before any work. A hospital's export that names columns its own way must be
refused naming the columns and pointing at the column map (``--map FILE.yaml``, a sites list's
``"map"``, ``data check --map``), or for a built-in dataset at its published names. The exports
are the example hospitals' (``examples/hospital/make_extract.py --sites 3``: synthetic, seeded),
their schema made by ``fedcare federation init`` over ``examples/hospital/definition.yaml``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from case_model import Builder, Case, Sources, write_diabetes
from site_fixtures import run, steps, write

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "hospital"
#: What the README's privacy block types, without its data folder.
PRIVACY_RUN = ("run", "--clients", "10", "--rounds", "20", "--dp-epsilon", "3",
               "--dp-delta", "1e-5", "--quiet")  # fmt: skip
#: A download cache that is not there (the runner's HOME is shared by every case).
NO_CACHE = {"FEDCARE_CACHE_DIR": "in/no-cache"}
#: What every "no data" refusal names.
THREE_WAYS = ("--data-dir", "FEDCARE_DATA_DIR", "fetch")


def _hospitals(inp: Path, _src: Sources) -> None:
    """The example hospitals' exports (``{in}/site1..3/encounters.csv.gz``) and declarations."""
    python = os.environ.get("BADINPUTS_PYTHON", "python")
    subprocess.run(
        [python, str(EXAMPLE / "make_extract.py"), "--out", str(inp), "--rows", "1500",
         "--sites", "3", "--seed", "7"],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    for name in ("definition.yaml", "site2-private.yaml", "site3-private.yaml", "site3-map.yaml"):
        shutil.copy(EXAMPLE / name, inp / name)


def _federation() -> Builder:
    """The hospitals and the coordinator's schema over their definition (``{in}/fed.json``)."""
    init = run("federation", "init", "--dataset", "{in}/definition.yaml", "--out", "{in}/fed.json")
    return steps(_hospitals, init)


def no_data_cases() -> list[Case]:
    """A run or check given no data: one line naming every way to give it."""

    def nd(
        cid: str,
        names: tuple[str, ...],
        argv: tuple[str, ...],
        build: Builder | None = None,
        env: dict[str, str] | None = None,
        note: str = "",
    ) -> Case:
        return Case(cid, "no-data", "refused", argv, build or steps(), names=names,
                    env=NO_CACHE | (env or {}), timeout=120, note=note)  # fmt: skip

    return [
        nd("nc-privacy-run-no-data", THREE_WAYS, PRIVACY_RUN,
           note="issue 52, 4: the README's privacy block in a fresh shell"),
        nd("nc-half-downloaded-cache", THREE_WAYS, PRIVACY_RUN,
           build=write("no-cache/diabetes130/diabetes130.zip.part", b"PK\x03\x04"),
           note="a download stopped half-way: the folder exists, the verified file does not"),
        nd("nc-data-check-no-data", THREE_WAYS, ("data", "check", "--dataset", "diabetes130")),
        nd("nc-env-names-nothing", ("FEDCARE_DATA_DIR",), PRIVACY_RUN,
           env={"FEDCARE_DATA_DIR": "../shared/datasets"},
           note="the Makefile's relative default, from another folder"),
        nd("nc-grid-env-names-nothing", ("FEDCARE_DATA_DIR",),
           ("experiment", "comparison", "--seeds", "1", "--rounds", "2", "--out",
            "{work}/out/grid"), env={"FEDCARE_DATA_DIR": "../shared/datasets"}),
        nd("nc-mimic-no-data", ("--data-dir", "FEDCARE_DATA_DIR"),
           ("run", "--dataset", "mimic3", "--rounds", "2", "--quiet")),
        nd("nc-definition-no-file", ("encounters.csv.gz", "--data-dir", "FEDCARE_DATA_DIR"),
           ("run", "--dataset", "{in}/definition.yaml", "--rounds", "2", "--quiet"),
           build=write("definition.yaml", (EXAMPLE / "definition.yaml").read_text()),
           note="a definition copied without its export beside it"),
    ]  # fmt: skip


def _renamed_builtin(inp: Path, src: Sources) -> None:
    """A Diabetes 130 export whose ``race`` column is called ``ethnicity``, and its schema."""
    lines = list(src.diabetes_lines[:601])
    lines[0] = lines[0].replace("race", "ethnicity")
    write_diabetes(inp, lines, name="export.csv")
    run("federation", "init", "--dataset", "diabetes130", "--out", "{in}/fed.json")(inp, src)


def _sites_without_map(inp: Path, _src: Sources) -> None:
    entries = [
        {"data": "site1/encounters.csv.gz", "objectives": ["mortality"], "name": "north"},
        {"data": "site3/encounters.csv.gz", "objectives": ["los"], "name": "east",
         "private": "site3-private.yaml"},
    ]  # fmt: skip
    (inp / "sites.json").write_text(json.dumps(entries))


def column_map_cases(src: Sources) -> list[Case]:
    """An export with its own names: the columns named, the column map pointed at."""
    prepare = ("site", "prepare", "--schema", "{in}/fed.json", "--objectives", "readmission",
               "--out", "{work}/out/site")  # fmt: skip
    site3 = ("--data", "{in}/site3/encounters.csv.gz")
    own = ("--private", "{in}/site3-private.yaml")
    part_map = write("part-map.yaml", "version: 1\nrename: {AGE: AGE_YRS}\n")

    def cm(
        cid: str,
        names: tuple[str, ...],
        argv: tuple[str, ...],
        build: Builder,
        secrets: tuple[str, ...] = (),
        note: str = "",
    ) -> Case:
        return Case(cid, "column-map", "refused", argv, build, names=names, secrets=secrets,
                    timeout=180, note=note)  # fmt: skip

    return [
        cm("nc-site-unmapped-export", ("MRN", "AGE_YRS", "--map", "rename"),
           (*prepare, *site3, *own), _federation(),
           note="issue 52, 8b: its own names, no --map"),
        cm("nc-site-map-incomplete", ("MRN", "part-map.yaml", "rename"),
           (*prepare, *site3, *own, "--map", "{in}/part-map.yaml"), steps(_federation(), part_map)),
        cm("nc-data-check-unmapped", ("MRN", "--map"),
           ("data", "check", "--dataset", "{in}/definition.yaml", "--data-dir",
            "{in}/site3/encounters.csv.gz"), _hospitals),
        cm("nc-run-sites-unmapped", ("MRN", "east", "map"),
           ("run", "--sites", "{in}/sites.json", "--schema", "{in}/fed.json", "--quiet",
            "--out", "{work}/out/r.json"), steps(_federation(), _sites_without_map)),
        cm("nc-site-builtin-renamed", ("race", "ethnicity", "built"),
           ("site", "prepare", "--schema", "{in}/fed.json", "--data", "{in}/export.csv",
            "--objectives", "readmission", "--out", "{work}/out/site"), _renamed_builtin,
           secrets=src.diabetes_ids(1, 2, 3)),
        cm("nc-site-private-builtin", ("--private", "FILE.yaml"),
           ("site", "prepare", "--schema", "{in}/fed.json", "--data", "{in}/export.csv",
            "--objectives", "readmission", "--private", "{in}/site3-private.yaml",
            "--out", "{work}/out/site"), steps(_renamed_builtin, _hospitals),
           note="a built-in dataset takes no --private: the message names the way"),
        Case("nc-ok-site-private-and-map", "column-map-valid", "accepted",
             (*prepare, *site3, *own, "--map", "{in}/site3-map.yaml", "--name", "east"),
             _federation(), outputs=("{work}/out/site/site-card.json",), timeout=180),
    ]  # fmt: skip


def newcomer_cases(src: Sources) -> list[Case]:
    """Every ``nc-*`` case, in report order."""
    return no_data_cases() + column_map_cases(src)
