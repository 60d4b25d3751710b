"""Sites from their own files: `fedcare data split-sites`, `fedcare run --sites`, `predict`.

The README promises that a patient's records are at one site: ``run --sites`` is given the same
hospital twice, or a hospital and a copy holding some of its patients, and must refuse naming
the two sites and a count, never a patient. Numbers that overflowed later (10**9 sites drew
objectives for ever) are refused where they are read. A valid MLflow store made before the
command (an empty SQLite file, as ``sqlite3 x.db ''`` makes) is accepted by ``run --sites``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from case_model import Builder, Case, Sources
from site_fixtures import copy, steps, write

OUT = "{work}/out/results.json"


def split_cases() -> list[Case]:
    """``data split-sites``: counts and seeds bounded before the draw and the read."""

    def ss(cid: str, names: tuple[str, ...], sites: str, *extra: str, seed: str = "0") -> Case:
        argv = (
            "data",
            "split-sites",
            "--dataset",
            "diabetes130",
            "--data",
            "{in}/cohort.csv",
            "--sites",
            sites,
            "--seed",
            seed,
            "--out",
            "{work}/out/hosp",
            *extra,
        )
        return Case(cid, "split-sites", "refused", argv, copy("cohort.csv"), names=names,
                    timeout=60)  # fmt: skip

    return [
        ss("x-split-sites-huge", ("--sites",), str(10**9)),
        ss("x-split-sites-one", ("--sites",), "1"),
        ss("x-split-seed-negative", ("--seed",), "3", seed="-1"),
        ss("x-split-seed-huge", ("--seed",), "3", seed=str(2**40)),
        ss("x-split-objectives-zero", ("--objectives-per-site",), "3",
           "--objectives-per-site", "0"),
        Case("x-ok-split", "split-sites-valid", "accepted",
             ("data", "split-sites", "--dataset", "diabetes130", "--data", "{in}/cohort.csv",
              "--sites", "3", "--seed", "7", "--out", "{work}/out/hosp"),
             copy("cohort.csv"), outputs=("{work}/out/hosp/sites.json",)),
    ]  # fmt: skip


def _sites(*entries: dict[str, Any]) -> Builder:
    def build(inp: Path, _src: Sources) -> None:
        (inp / "sites.json").write_text(json.dumps(list(entries)))

    return build


def _part_of(source: str, target: str, rows: int) -> Builder:
    """``{in}/target``: the header and the first ``rows`` records of ``{in}/source``."""

    def build(inp: Path, _src: Sources) -> None:
        lines = (inp / source).read_bytes().splitlines(keepends=True)
        (inp / target).write_bytes(b"".join(lines[: rows + 1]))

    return build


def run_sites_cases() -> list[Case]:
    """``run --sites``: the same patients at two sites, entries of the wrong types, bounds."""
    a = {"name": "north", "data": "hosp/site-0.csv", "objectives": ["readmission"]}
    b = {"name": "south", "data": "hosp/site-1.csv", "objectives": ["los"]}
    base = copy("fed.json", "hosp")

    def rs(cid: str, names: tuple[str, ...], build: Builder, *extra: str) -> Case:
        argv = (
            "run",
            "--sites",
            "{in}/sites.json",
            "--schema",
            "{in}/fed.json",
            "--quiet",
            "--out",
            OUT,
            *extra,
        )
        return Case(cid, "run-sites", "refused", argv, steps(base, build), names=names)  # fmt: skip

    again = {"name": "north-again", "data": "hosp/site-0.csv", "objectives": ["los"]}
    part = {"name": "clinic", "data": "clinic.csv", "objectives": ["los"]}
    store = ("--tracking-uri", "sqlite:///{work}/out/mlflow.db")
    return [
        rs("x-run-same-file-twice", ("north", "north-again"), _sites(a, again), *store),
        rs("x-run-shared-patients", ("north", "clinic"),
           steps(_part_of("hosp/site-0.csv", "clinic.csv", 500), _sites(a, b, part))),
        rs("x-run-name-number", ("sites.json", "name"), _sites(a, b | {"name": 5})),
        rs("x-run-name-escape", ("sites.json", "name"), _sites(a, b | {"name": "../x"})),
        rs("x-run-name-newline", ("sites.json", "name"), _sites(a, b | {"name": "a\nb"})),
        rs("x-run-data-number", ("sites.json", "data"), _sites(a, b | {"data": 7})),
        rs("x-run-one-site", ("sites.json",), _sites(a)),
        rs("x-run-not-json", ("sites.json",), write("sites.json", "[{")),
        rs("x-run-rounds-huge", ("--rounds",), _sites(a, b), "--rounds", str(10**9)),
        rs("x-run-seed-negative", ("--seed",), _sites(a, b), "--seed", "-1"),
        Case("x-ok-run-sites", "run-sites-valid", "accepted",
             ("run", "--sites", "{in}/sites.json", "--schema", "{in}/fed.json", "--quiet",
              "--out", OUT), steps(base, _sites(a, b)), outputs=(OUT,)),
        Case("x-ok-run-sites-empty-store", "run-sites-valid", "accepted",
             ("run", "--sites", "{in}/sites.json", "--schema", "{in}/fed.json", "--quiet",
              "--out", OUT, "--tracking-uri", "sqlite:///{in}/store/mlflow.db"),
             steps(base, _sites(a, b), write("store/mlflow.db", b"")), outputs=(OUT,),
             note="`sqlite3 mlflow.db ''`: an empty database is a valid new store"),
    ]  # fmt: skip


def predict_cases() -> list[Case]:
    """``predict`` on a store that holds no model: refused, the store left as it was."""

    def pr(cid: str, names: tuple[str, ...], build: Builder, db: str) -> Case:
        argv = (
            "predict",
            "--model",
            "models:/fedcare-diabetes130-fedcare-north@champion",
            "--data",
            "{in}/hosp/site-0.csv",
            "--out",
            "{work}/out/scores.csv",
            "--tracking-uri",
            f"sqlite:///{db}",
        )
        return Case(cid, "predict", "refused", argv, steps(copy("hosp"), build),
                    names=names)  # fmt: skip

    return [
        pr("x-pred-empty-store", ("--tracking-uri",), write("x.db", b""), "{in}/x.db"),
        pr("x-pred-not-a-store", ("--tracking-uri",), write("x.db", "hello\n"), "{in}/x.db"),
        pr("x-pred-no-store", ("--tracking-uri",), lambda i, s: None, "{in}/none/x.db"),
    ]


def multisite_data_cases(src: Sources) -> list[Case]:
    """Every split-sites, run --sites and predict case."""
    return split_cases() + run_sites_cases() + predict_cases()
